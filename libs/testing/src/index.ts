export * from './database';
export * from './nats-cluster';
export * from './nats-server';
export * from './postgres-server';
export * from './root';
export * from './wait';
export * from './chat-params';
export * from './s3-server';
