import { Controller, Module } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { ErrorCode, RpcSubject, ServiceError } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { startNatsServer, TestNatsServer, waitFor } from '@trainyard/testing';
import { ReadinessService } from '../src/health/readiness.service';
import { DrainingNatsServer } from '../src/shutdown/draining-nats.server';
import { GracefulShutdown } from '../src/shutdown/graceful-shutdown';
import { startRpcClient, startService } from './nats-services';

const slow: RpcSubject<{ ms: number }, { done: true }> = { name: 'test.drain.slow.v1' };

@Controller()
class SlowController {
  @MessagePattern(slow.name)
  async slow(@Payload() data: { ms: number }) {
    await new Promise((resolve) => setTimeout(resolve, data.ms));
    return { done: true };
  }
}

@Module({ controllers: [SlowController] })
class SlowModule {}

describe('DrainingNatsServer against a real nats-server', () => {
  let nats: TestNatsServer;
  let shutdown: GracefulShutdown;
  let server: DrainingNatsServer;
  let rpc: RpcClient;
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    nats = await startNatsServer();
    shutdown = new GracefulShutdown(new ReadinessService());
    server = new DrainingNatsServer({ servers: [nats.url], queue: 'test-drain' }, shutdown);
    const service = await startService(SlowModule, server);
    closers.push(() => service.close());

    const client = await startRpcClient(nats.url);
    rpc = client.rpc;
    closers.push(client.close);
  });

  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await nats.stop();
  });

  it('answers the requests it holds after it stops taking new ones, which find nobody', async () => {
    const held = rpc.request(slow, { ms: 500 });
    // The request is held for its 500 ms once the service has it, however long a loaded machine takes to deliver it.
    await waitFor(() => shutdown.held === 1, { what: 'the service to hold the request', timeoutMs: 5_000, intervalMs: 5 });

    await server.stopIntake();
    const refused = await rpc.request(slow, { ms: 0 }).catch((err: ServiceError) => err);
    expect(refused).toBeInstanceOf(ServiceError);
    expect((refused as ServiceError).code).toBe(ErrorCode.Unavailable);

    expect(await held).toEqual({ done: true });
    expect(await shutdown.idle(5_000)).toBe(true);
  });
});
