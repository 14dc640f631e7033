import { Controller, DynamicModule, Inject, Injectable, Module, OnModuleInit, Type } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import {
  Empty,
  RpcSubject,
  ServiceHealthReport,
  WorkQueueName,
  WorkQueues,
} from '@trainyard/contracts';
import { ensureWorkQueue, MessagingModule, NATS_CONNECTION, workQueueDepth } from '@trainyard/messaging';
import type { NatsConnection } from 'nats';
import type { BaseServiceConfig } from './config/base-service.config';
import { ProcessHealthModule } from './health/health.module';
import { ReadinessService } from './health/readiness.service';
import { GracefulShutdown } from './shutdown/graceful-shutdown';

export const SERVICE_IDENTITY = Symbol('SERVICE_IDENTITY');

export interface ServiceIdentity {
  name: string;
  instance: string;
}

export interface ServiceRuntimeOptions {
  name: string;
  config: BaseServiceConfig;
  /** The subject on which the health service asks this service about itself. */
  healthSubject?: RpcSubject<Empty, ServiceHealthReport>;
  /** Work queues this process publishes to or consumes; created idempotently at start. */
  workQueues?: WorkQueueName[];
}

/**
 * What every process of the system has: NATS (RPC client and raw connection), its
 * /health/live and /health/ready, a readiness probe for NATS and for each work queue it
 * uses, for services an answer to the health service's check, and the graceful-shutdown
 * signals that whatever holds work listens to.
 */
@Module({})
export class ServiceRuntimeModule {
  static forRoot(options: ServiceRuntimeOptions): DynamicModule {
    const { name, config } = options;
    const identity: ServiceIdentity = { name, instance: config.INSTANCE_ID };
    return {
      module: ServiceRuntimeModule,
      global: true,
      imports: [
        MessagingModule.forRoot({
          servers: config.NATS_URL,
          connectionName: name,
          rpcTimeoutMs: config.RPC_TIMEOUT_MS,
          streamPrefix: config.JETSTREAM_PREFIX,
          jetstreamReplicas: config.JETSTREAM_REPLICAS,
        }),
        ProcessHealthModule,
      ],
      controllers: options.healthSubject ? [serviceHealthController(options.healthSubject)] : [],
      providers: [
        { provide: SERVICE_IDENTITY, useValue: identity },
        { provide: WORK_QUEUES, useValue: options.workQueues ?? [] },
        { provide: STREAM_PREFIX, useValue: config.JETSTREAM_PREFIX },
        { provide: STREAM_REPLICAS, useValue: config.JETSTREAM_REPLICAS },
        MessagingReadiness,
        GracefulShutdown,
      ],
      exports: [MessagingModule, ProcessHealthModule, SERVICE_IDENTITY, GracefulShutdown],
    };
  }
}

const WORK_QUEUES = Symbol('WORK_QUEUES');
const STREAM_PREFIX = Symbol('STREAM_PREFIX');
const STREAM_REPLICAS = Symbol('STREAM_REPLICAS');

@Injectable()
class MessagingReadiness implements OnModuleInit {
  constructor(
    private readonly readiness: ReadinessService,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(WORK_QUEUES) private readonly queues: WorkQueueName[],
    @Inject(STREAM_PREFIX) private readonly prefix: string,
    @Inject(STREAM_REPLICAS) private readonly replicas: number,
  ) {}

  async onModuleInit(): Promise<void> {
    this.readiness.register('nats', async () => ({ rtt_ms: await this.nc.rtt() }));
    for (const queue of this.queues) {
      const spec = await ensureWorkQueue(this.nc, WorkQueues[queue], this.prefix, { replicas: this.replicas });
      this.readiness.register(`${queue}-queue`, async () => ({
        stream: spec.stream,
        pending: await workQueueDepth(this.nc, WorkQueues[queue], this.prefix),
      }));
    }
  }
}

function serviceHealthController(subject: RpcSubject<Empty, ServiceHealthReport>): Type<unknown> {
  @Controller()
  class ServiceHealthController {
    constructor(
      private readonly readiness: ReadinessService,
      @Inject(SERVICE_IDENTITY) private readonly identity: ServiceIdentity,
    ) {}

    @MessagePattern(subject.name)
    async check(): Promise<ServiceHealthReport> {
      const { ok, checks } = await this.readiness.report(1_500);
      return { service: this.identity.name, instance: this.identity.instance, ok, checks };
    }
  }
  return ServiceHealthController;
}
