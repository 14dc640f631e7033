export * from './jetstream';
export * from './messaging.module';
export * from './nats.tokens';
export * from './request-context';
export * from './request-id.interceptor';
export * from './rpc-errors';
export * from './rpc-exception.filter';
export * from './rpc.client';
