import { Controller, INestMicroservice, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Ctx, MessagePattern, NatsContext, Payload, Transport } from '@nestjs/microservices';
import { ErrorCode, REQUEST_ID_HEADER, RpcSubject, ServiceError } from '@trainyard/contracts';
import { startNatsServer, TestNatsServer } from '@trainyard/testing';
import { NatsConnection } from 'nats';
import { firstValueFrom } from 'rxjs';
import { MessagingModule, MuxedInboxClientNats, RpcClient, RpcErrorFilter, runWithRequestId } from '../src';

const echo: RpcSubject<{ text: string }, { text: string; requestId: string | null; replica: string }> = { name: 'test.echo.v1' };
const fail: RpcSubject<{ coded: boolean }, never> = { name: 'test.fail.v1' };
const slow: RpcSubject<{ ms: number }, { done: true }> = { name: 'test.slow.v1' };
const nobody: RpcSubject<object, never> = { name: 'test.nobody.v1' };

function serviceModule(replica: string) {
  @Controller()
  class TestController {
    @MessagePattern(echo.name)
    echo(@Payload() data: { text: string }, @Ctx() ctx: NatsContext) {
      return { text: data.text, requestId: ctx.getHeaders()?.get(REQUEST_ID_HEADER) || null, replica };
    }

    @MessagePattern(fail.name)
    fail(@Payload() data: { coded: boolean }) {
      if (data.coded) throw ServiceError.conflict('already exists');
      throw new Error('database password is hunter2');
    }

    @MessagePattern(slow.name)
    async slow(@Payload() data: { ms: number }) {
      await new Promise((resolve) => setTimeout(resolve, data.ms));
      return { done: true };
    }
  }

  @Module({ controllers: [TestController] })
  class ServiceModule {}
  return ServiceModule;
}

async function startReplica(url: string, replica: string): Promise<INestMicroservice> {
  const moduleRef = await Test.createTestingModule({ imports: [serviceModule(replica)] }).compile();
  const service = moduleRef.createNestMicroservice({ transport: Transport.NATS, options: { servers: [url], queue: 'test-service' } });
  service.useGlobalFilters(new RpcErrorFilter());
  await service.listen();
  return service;
}

describe('RpcClient against a real nats-server', () => {
  let nats: TestNatsServer;
  let replicas: INestMicroservice[];
  let rpc: RpcClient;
  let close: () => Promise<void>;

  beforeAll(async () => {
    nats = await startNatsServer();
    replicas = [await startReplica(nats.url, 'a'), await startReplica(nats.url, 'b')];
    // The default timeout is generous: a hundred concurrent requests through two replicas can
    // take seconds on a loaded 2-core machine, and the tests of timeouts set their own.
    const client = await Test.createTestingModule({
      imports: [MessagingModule.forRoot({ servers: [nats.url], connectionName: 'test', rpcTimeoutMs: 15_000, streamPrefix: '', jetstreamReplicas: 1 })],
    }).compile();
    const app = client.createNestApplication();
    await app.init();
    rpc = app.get(RpcClient);
    close = () => app.close();
  });

  afterAll(async () => {
    await close();
    await Promise.all(replicas.map((r) => r.close()));
    await nats.stop();
  });

  it('sends a typed request and gets the reply, with the request id carried in a header', async () => {
    const reply = await rpc.request(echo, { text: 'hi' }, { requestId: 'req-123' });
    expect(reply).toMatchObject({ text: 'hi', requestId: 'req-123' });
  });

  it('carries the current request id on without being told', async () => {
    const reply = await runWithRequestId('ctx-7', () => rpc.request(echo, { text: 'hi' }));
    expect(reply.requestId).toBe('ctx-7');
  });

  it('shares requests between replicas of one queue group', async () => {
    const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => rpc.request(echo, { text: String(i) })));
    expect(new Set(replies.map((r) => r.replica))).toEqual(new Set(['a', 'b']));
  });

  it('hands each of many concurrent replies to the request it answers', async () => {
    const texts = Array.from({ length: 100 }, (_, i) => `request ${i}`);
    const replies = await Promise.all(texts.map((text) => rpc.request(echo, { text })));
    expect(replies.map((r) => r.text)).toEqual(texts);
  });

  it('drops a reply that comes after its request timed out, and later requests get their own', async () => {
    const late = await rpc.request(slow, { ms: 300 }, { timeoutMs: 50 }).catch((e: ServiceError) => e);
    expect((late as ServiceError).code).toBe(ErrorCode.Timeout);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await expect(rpc.request(echo, { text: 'after' })).resolves.toMatchObject({ text: 'after' });
  });

  it('subscribes once for the replies of all its requests', async () => {
    const client = new MuxedInboxClientNats({ servers: [nats.url] });
    await client.connect();
    try {
      const subscribe = jest.spyOn(client.unwrap<NatsConnection>(), 'subscribe');
      for (let i = 0; i < 5; i++) await firstValueFrom(client.send(echo.name, { text: String(i) }));
      await Promise.all(Array.from({ length: 5 }, (_, i) => firstValueFrom(client.send(echo.name, { text: String(i) }))));
      expect(subscribe).toHaveBeenCalledTimes(1);
    } finally {
      await client.close();
    }
  });

  it('carries a coded ServiceError across the wire', async () => {
    const error = await rpc.request(fail, { coded: true }).catch((e: ServiceError) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error.code).toBe(ErrorCode.Conflict);
    expect(error.message).toBe('already exists');
  });

  it('sends an uncoded error as a bare internal error, without its message', async () => {
    const error = await rpc.request(fail, { coded: false }).catch((e: ServiceError) => e);
    expect(error.code).toBe(ErrorCode.Internal);
    expect(error.message).not.toContain('hunter2');
  });

  it('fails a slow request with `timeout` instead of hanging', async () => {
    const error = (await rpc.request(slow, { ms: 1_000 }, { timeoutMs: 100 }).catch((e: ServiceError) => e)) as ServiceError;
    expect(error.code).toBe(ErrorCode.Timeout);
  });

  it('fails a request nobody listens to with `unavailable`, well before the timeout', async () => {
    const started = Date.now();
    const error = await rpc.request(nobody, {}, { timeoutMs: 5_000 }).catch((e: ServiceError) => e);
    expect(error.code).toBe(ErrorCode.Unavailable);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
