import { Controller, Module } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { EventSubject, RpcSubject } from '@trainyard/contracts';
import { encodeMessage, RequestConnection, RpcClient } from '@trainyard/messaging';
import { startNatsServer, TestNatsServer } from '@trainyard/testing';
import { connect, NatsConnection } from 'nats';
import { ReadinessService } from '../src/health/readiness.service';
import { DrainingNatsServer } from '../src/shutdown/draining-nats.server';
import { GracefulShutdown } from '../src/shutdown/graceful-shutdown';
import { startRpcClient, startService } from './nats-services';

const ANNOUNCEMENTS: EventSubject<Record<string, never>> = { name: 'test.order.announced.v1' };
const count: RpcSubject<Record<string, never>, { seen: number }> = { name: 'test.order.count.v1' };

/** What the announcement callback has counted, as the request handler reads it. */
const state = { seen: 0 };

@Controller()
class CountController {
  @MessagePattern(count.name)
  count(): { seen: number } {
    return { seen: state.seen };
  }
}

@Module({ controllers: [CountController] })
class CountModule {}

describe('RequestConnection against a real nats-server', () => {
  let nats: TestNatsServer;
  let announcer: NatsConnection;
  let rpc: RpcClient;
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    nats = await startNatsServer();
    const requests = new RequestConnection();
    requests.whenConnected((bus) => bus.subscribe(ANNOUNCEMENTS, () => state.seen++));
    const server = new DrainingNatsServer({ servers: [nats.url], queue: 'test-order' }, new GracefulShutdown(new ReadinessService()), requests);
    const service = await startService(CountModule, server);
    closers.push(() => service.close());

    announcer = await connect({ servers: nats.url });
    closers.push(() => announcer.close());
    const client = await startRpcClient(nats.url);
    rpc = client.rpc;
    closers.push(client.close);
  });

  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await nats.stop();
  });

  it('runs the callbacks subscribed on it before the handler of any request sent after their message was flushed', async () => {
    for (let i = 1; i <= 50; i++) {
      // Another connection announces and has the server take it, as the registry does before it acknowledges.
      announcer.publish(ANNOUNCEMENTS.name, encodeMessage({}));
      await announcer.flush();
      expect(await rpc.request(count, {})).toEqual({ seen: i });
    }
  });
});
