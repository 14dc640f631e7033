import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ErrorCode, ServiceError, Subjects, WorkerAnnouncement, WorkQueues } from '@trainyard/contracts';
import { NATS_CONNECTION, workQueueDepth } from '@trainyard/messaging';
import { JSONCodec, NatsConnection, RequestStrategy } from 'nats';
import { ChatConfig } from '../config/chat.config';

const announcements = JSONCodec<WorkerAnnouncement>();

/**
 * Admission control before anything is queued: no inference worker at all is 503; every
 * worker full and the queue at its bound is 429 with Retry-After, instead of a queue that
 * grows without limit. Workers and the queue depth are polled in the background, so
 * admission costs no round trip (and may lag the truth by one poll interval).
 */
@Injectable()
export class InferenceCapacity implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(InferenceCapacity.name);
  private workers: WorkerAnnouncement[] = [];
  /** Completions waiting in the inference queue, as of the last poll. */
  private queued = 0;
  private polledOnce?: Promise<void>;
  private timer?: NodeJS.Timeout;

  constructor(
    @Inject(ChatConfig) private readonly config: ChatConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  onModuleInit(): void {
    this.polledOnce = this.poll();
    this.timer = setInterval(() => void this.poll(), this.config.WORKER_POLL_MS);
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  async admit(): Promise<void> {
    await this.polledOnce;
    let ready = this.workers.filter((w) => w.ready);
    // A worker may have come up since the last poll (a fresh stack): look again before refusing.
    if (ready.length === 0) {
      await this.poll();
      ready = this.workers.filter((w) => w.ready);
    }
    if (ready.length === 0) {
      throw new ServiceError(ErrorCode.Unavailable, 'No inference worker is running', { retryAfterSeconds: 5 });
    }
    const free = ready.reduce((sum, w) => sum + Math.max(0, w.capacity.slots - w.capacity.active), 0);
    if (this.queued >= free + this.config.MAX_QUEUED_COMPLETIONS) {
      throw new ServiceError(ErrorCode.RateLimited, `All inference workers are busy (${this.queued} completions waiting)`, {
        retryAfterSeconds: 1,
      });
    }
  }

  private async poll(): Promise<void> {
    try {
      const found: WorkerAnnouncement[] = [];
      const replies = await this.nc.requestMany(Subjects.workers.ping.name, undefined, {
        strategy: RequestStrategy.JitterTimer,
        jitter: 100,
        maxWait: Math.max(200, this.config.WORKER_POLL_MS - 100),
      });
      const depth = workQueueDepth(this.nc, WorkQueues.inference, this.config.JETSTREAM_PREFIX);
      for await (const reply of replies) {
        const announcement = announcements.decode(reply.data);
        if (announcement.kind === 'inference') found.push(announcement);
      }
      this.workers = found;
      this.queued = await depth;
    } catch (err) {
      this.logger.warn(`could not poll inference workers: ${(err as Error).message}`);
      this.workers = [];
    }
  }
}
