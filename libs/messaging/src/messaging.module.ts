import { DynamicModule, Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { ClientProxy } from '@nestjs/microservices';
import { connect, NatsConnection } from 'nats';
import { MessageBus } from './message-bus';
import { MuxedInboxClientNats } from './muxed-inbox.client';
import { MESSAGING_OPTIONS, MessagingOptions, NATS_CLIENT, NATS_CONNECTION } from './nats.tokens';
import { RequestConnection } from './request-connection';
import { RpcClient } from './rpc.client';

/**
 * NATS for one app: the Nest client proxy behind RpcClient (request/reply, with one reply
 * subscription for all requests: MuxedInboxClientNats) and a raw nats.js connection, which
 * apps use through MessageBus (events, work queues, probes, scatter-gather). Both reconnect forever by themselves, so a restarted
 * nats-server is picked up without restarting the app. For services, RequestConnection gives
 * access to the connection their requests arrive on.
 */
@Global()
@Module({})
export class MessagingModule implements OnApplicationShutdown {
  private readonly logger = new Logger(MessagingModule.name);

  constructor(
    @Inject(NATS_CLIENT) private readonly client: ClientProxy,
    @Inject(NATS_CONNECTION) private readonly connection: NatsConnection,
  ) {}

  static forRoot(options: MessagingOptions): DynamicModule {
    return {
      module: MessagingModule,
      providers: [
        { provide: MESSAGING_OPTIONS, useValue: options },
        {
          provide: NATS_CLIENT,
          useFactory: () => new MuxedInboxClientNats({ servers: options.servers, name: `${options.connectionName}-rpc`, ...RECONNECT_FOREVER }),
        },
        {
          provide: NATS_CONNECTION,
          useFactory: () => connect({ servers: options.servers, name: options.connectionName, ...RECONNECT_FOREVER }),
        },
        {
          provide: MessageBus,
          useFactory: (nc: NatsConnection) => new MessageBus(nc, options.streamPrefix),
          inject: [NATS_CONNECTION],
        },
        RpcClient,
        RequestConnection,
      ],
      exports: [MESSAGING_OPTIONS, NATS_CLIENT, NATS_CONNECTION, MessageBus, RpcClient, RequestConnection],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.client.close();
    if (!this.connection.isClosed()) {
      await this.connection.drain().catch((err: Error) => this.logger.warn(`NATS drain failed: ${err.message}`));
    }
  }
}

export const RECONNECT_FOREVER = {
  reconnect: true,
  maxReconnectAttempts: -1,
  reconnectTimeWait: 500,
  waitOnFirstConnect: true,
} as const;
