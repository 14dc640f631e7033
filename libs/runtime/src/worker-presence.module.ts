import { DynamicModule, Inject, Injectable, Module, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Subjects, WorkerAnnouncement } from '@trainyard/contracts';
import { NATS_CONNECTION } from '@trainyard/messaging';
import { JSONCodec, NatsConnection, Subscription } from 'nats';
import { ReadinessService } from './health/readiness.service';

const ANNOUNCEMENT = Symbol('ANNOUNCEMENT');
const codec = JSONCodec<WorkerAnnouncement>();

/**
 * Lets system-check find every worker: each replica answers the workers ping (no queue
 * group, so all of them do) with its kind, instance and compute backend.
 */
@Injectable()
class WorkerPresence implements OnModuleInit, OnModuleDestroy {
  private subscription?: Subscription;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(ANNOUNCEMENT) private readonly announcement: Omit<WorkerAnnouncement, 'ready'>,
    private readonly readiness: ReadinessService,
  ) {}

  onModuleInit(): void {
    this.subscription = this.nc.subscribe(Subjects.workers.ping.name, {
      callback: async (err, msg) => {
        if (err) return;
        const { ok } = await this.readiness.report(1_000);
        msg.respond(codec.encode({ ...this.announcement, ready: ok }));
      },
    });
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }
}

@Module({})
export class WorkerPresenceModule {
  static forRoot(announcement: Omit<WorkerAnnouncement, 'ready'>): DynamicModule {
    return {
      module: WorkerPresenceModule,
      providers: [{ provide: ANNOUNCEMENT, useValue: announcement }, WorkerPresence],
    };
  }
}
