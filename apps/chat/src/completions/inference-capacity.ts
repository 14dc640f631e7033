import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ErrorCode, ServiceError, Subjects, WorkerAnnouncement, WorkQueues } from '@trainyard/contracts';
import { NATS_CONNECTION, workQueueDepth } from '@trainyard/messaging';
import { ErrorCode as NatsErrorCode, JSONCodec, NatsConnection, NatsError, RequestStrategy } from 'nats';
import { ChatConfig } from '../config/chat.config';

const announcements = JSONCodec<WorkerAnnouncement>();

/**
 * Admission control before anything is queued: no inference worker at all is 503; every
 * worker full and the queue at its bound is 429 with Retry-After, instead of a queue that
 * grows without limit. Workers and the queue depth are polled in the background, so
 * admission costs no round trip (and may lag the truth by one poll interval). A worker that
 * misses polls (busy in a long forward pass on a loaded machine) keeps its last answer until
 * WORKER_STALE_MS has passed without one.
 */
@Injectable()
export class InferenceCapacity implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(InferenceCapacity.name);
  /** Every worker seen within WORKER_STALE_MS, by instance: its last answer and when it came. */
  private readonly seen = new Map<string, { announcement: WorkerAnnouncement; at: number }>();
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
    let ready = this.readyWorkers();
    // A worker may have come up since the last poll (a fresh stack): look again before refusing.
    if (ready.length === 0) {
      await this.poll();
      ready = this.readyWorkers();
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

  private readyWorkers(): WorkerAnnouncement[] {
    return [...this.seen.values()].map((w) => w.announcement).filter((w) => w.ready);
  }

  private async poll(): Promise<void> {
    const now = Date.now();
    for (const [instance, { at }] of this.seen) if (now - at > this.config.WORKER_STALE_MS) this.seen.delete(instance);
    try {
      const replies = await this.nc.requestMany(Subjects.workers.ping.name, undefined, {
        strategy: RequestStrategy.JitterTimer,
        jitter: 100,
        maxWait: Math.max(200, this.config.WORKER_POLL_MS - 100),
      });
      const depth = workQueueDepth(this.nc, WorkQueues.inference, this.config.JETSTREAM_PREFIX);
      // Handled even when reading the replies throws first (the connection closing at shutdown):
      // an unhandled rejection would end the process with exit code 1.
      depth.catch(() => undefined);
      for await (const reply of replies) {
        const announcement = announcements.decode(reply.data);
        if (announcement.kind === 'inference') this.seen.set(announcement.instance, { announcement, at: Date.now() });
      }
      this.queued = await depth;
    } catch (err) {
      // No responders: no worker is subscribed at all, so none is running. No answer in time:
      // each worker is forgotten only once it has been silent for WORKER_STALE_MS.
      if ((err as NatsError).code === NatsErrorCode.NoResponders) this.seen.clear();
      this.logger.warn(`could not poll inference workers: ${(err as Error).message}`);
    }
  }
}
