import { INestMicroservice, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { MessagingModule, RequestIdInterceptor, RpcClient, RpcErrorFilter } from '@trainyard/messaging';
import { DrainingNatsServer } from '../src/shutdown/draining-nats.server';

/**
 * A Nest microservice of `module` on `server`, set up as bootstrap() sets up the apps: the RPC
 * error filter, and the request-id interceptor (with an interceptor, a handler runs some hops
 * after its message is read, and only once Nest subscribes to its reply).
 */
export async function startService(module: Type, server: DrainingNatsServer): Promise<INestMicroservice> {
  const service = (await Test.createTestingModule({ imports: [module] }).compile()).createNestMicroservice({ strategy: server });
  service.useGlobalFilters(new RpcErrorFilter());
  service.useGlobalInterceptors(new RequestIdInterceptor());
  await service.listen();
  return service;
}

/** An RpcClient on its own connection to `url`, as a calling app has it; close() when done. */
export async function startRpcClient(url: string): Promise<{ rpc: RpcClient; close: () => Promise<void> }> {
  const client = (
    await Test.createTestingModule({
      imports: [MessagingModule.forRoot({ servers: [url], connectionName: 'test', rpcTimeoutMs: 5_000, streamPrefix: '', jetstreamReplicas: 1 })],
    }).compile()
  ).createNestApplication();
  await client.init();
  return { rpc: client.get(RpcClient), close: () => client.close() };
}
