import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ErrorCode, ServiceError, Subjects, WorkerAnnouncement } from '@trainyard/contracts';
import { EventSubscription, MessageBus, NoResponders } from '@trainyard/messaging';
import { ChatConfig } from '../config/chat.config';
import { WorkerSignals } from './worker-signals';

/** How long the worker holding a completion gets to answer its liveness subject. */
const LIVENESS_TIMEOUT_MS = 2_000;

/**
 * Admission control before anything is queued: no inference worker at all is 503; otherwise a
 * completion is admitted only while fewer than the workers' slots plus MAX_QUEUED_COMPLETIONS
 * are admitted and not yet over, else 429 with Retry-After. The count is exact: an admission
 * is counted the moment it is granted and released when the gateway announces the completion
 * over (`chat.completion.ended.v1`: answered, failed, cancelled or timed out) or when it could
 * not be queued. So the bound holds at any burst size, on this replica (N chat replicas admit
 * up to N times the bound; a restarted replica starts counting from zero).
 *
 * An end never announced (its gateway died, or the announcement was lost while NATS was down)
 * is caught by the worker poll: an admission older than COMPLETION_DEADLINE_MS is released
 * once no worker answers its liveness subject (queued past its deadline, a worker drops it).
 *
 * Workers (ready or not, and their slots) are polled in the background, so admission costs no
 * round trip. A worker that misses polls (busy in a long forward pass on a loaded machine)
 * keeps its last answer until WORKER_STALE_MS has passed without one.
 */
@Injectable()
export class InferenceCapacity implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(InferenceCapacity.name);
  /** Every worker seen within WORKER_STALE_MS, by instance: its last answer and when it came. */
  private readonly seen = new Map<string, { announcement: WorkerAnnouncement; at: number }>();
  /** Completions admitted and not yet over, by id: when each was admitted. */
  private readonly admitted = new Map<string, number>();
  /** Admissions whose liveness is being asked right now. */
  private readonly probing = new Set<string>();
  private polledOnce?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private ended?: EventSubscription;

  constructor(
    @Inject(ChatConfig) private readonly config: ChatConfig,
    private readonly bus: MessageBus,
    private readonly workers: WorkerSignals,
  ) {}

  onModuleInit(): void {
    // A message that is not a CompletionEnded releases nothing.
    this.ended = this.bus.subscribe(Subjects.chat.completionEnded, (ended) => this.release(ended?.completion_id));
    this.polledOnce = this.poll();
    this.timer = setInterval(() => void this.poll(), this.config.WORKER_POLL_MS);
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
    this.ended?.unsubscribe();
  }

  /** Admits the completion or throws (503 no worker, 429 full); the same id twice counts once. */
  async admit(completionId: string): Promise<void> {
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
    if (this.admitted.has(completionId)) return;
    const slots = ready.reduce((sum, w) => sum + w.capacity.slots, 0);
    if (this.admitted.size >= slots + this.config.MAX_QUEUED_COMPLETIONS) {
      const waiting = Math.max(0, this.admitted.size - slots);
      throw new ServiceError(
        ErrorCode.RateLimited,
        `All inference workers are busy (${slots} slots taken, ${waiting} completions waiting)`,
        { retryAfterSeconds: 1 },
      );
    }
    this.admitted.set(completionId, Date.now());
  }

  /** The completion is over (or was never queued); unknown ids are ignored. */
  release(completionId: string): void {
    this.admitted.delete(completionId);
  }

  private readyWorkers(): WorkerAnnouncement[] {
    return [...this.seen.values()].map((w) => w.announcement).filter((w) => w.ready);
  }

  private async poll(): Promise<void> {
    const now = Date.now();
    for (const [instance, { at }] of this.seen) if (now - at > this.config.WORKER_STALE_MS) this.seen.delete(instance);
    for (const [id, since] of this.admitted) {
      if (now - since > this.config.COMPLETION_DEADLINE_MS && !this.probing.has(id)) void this.releaseIfNobodyHolds(id);
    }
    try {
      const replies = await this.bus.gather(Subjects.workers.ping, {}, { jitterMs: 100, maxWaitMs: Math.max(200, this.config.WORKER_POLL_MS - 100) });
      for (const announcement of replies) {
        if (announcement.kind === 'inference') this.seen.set(announcement.instance, { announcement, at: Date.now() });
      }
    } catch (err) {
      // No responders: no worker is subscribed at all, so none is running. No answer in time:
      // each worker is forgotten only once it has been silent for WORKER_STALE_MS.
      if (err instanceof NoResponders) this.seen.clear();
      this.logger.warn(`could not poll inference workers: ${(err as Error).message}`);
    }
  }

  /** Past its deadline a completion is either being generated (its worker answers) or over. */
  private async releaseIfNobodyHolds(completionId: string): Promise<void> {
    this.probing.add(completionId);
    try {
      // No answer in time may be a worker too busy to answer: asked again at the next poll.
      if ((await this.workers.alive(completionId, LIVENESS_TIMEOUT_MS)) === false) {
        this.logger.warn(`${completionId}: admitted ${this.config.COMPLETION_DEADLINE_MS} ms ago, never announced over and held by no worker; released`);
        this.release(completionId);
      }
    } finally {
      this.probing.delete(completionId);
    }
  }
}
