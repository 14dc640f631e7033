import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InferenceWork, Subjects, WorkQueues } from '@trainyard/contracts';
import { EventSubscription, MessageBus, WorkMessage, WorkQueueReader } from '@trainyard/messaging';
import { GracefulShutdown, onAbort } from '@trainyard/runtime';
import { InferenceScheduler } from './inference-scheduler';
import { PeerLoads } from './peer-loads';

/**
 * Pulls completions from the inference work queue only while this worker has a free slot,
 * so work waits in the queue (where the chat service can see it) rather than on a busy
 * worker. A message is acknowledged on admission: a completion that has begun streaming
 * cannot be replayed elsewhere, so a worker that dies mid-way makes its clients fail fast.
 * On SIGTERM it stops pulling at once; a message that arrives as it stops goes back to the queue.
 *
 * A burst is shared out between workers: JetStream hands each message to the request for work
 * that has waited longest, so a worker that holds more sequences than a peer already asking
 * leaves the next one to that peer (PeerLoads) instead of racing it. Otherwise the split
 * follows who happens to be between decode steps, and a burst of 8 on two workers was seen to
 * go 5 and 3, which slows every stream on the busier one.
 */
@Injectable()
export class WorkQueueConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WorkQueueConsumer.name);
  private stopping = false;
  /** A request for work is outstanding at the queue. */
  private asking = false;
  private cancelSubscription?: EventSubscription;
  private consuming?: Promise<void>;

  constructor(
    private readonly bus: MessageBus,
    private readonly scheduler: InferenceScheduler,
    private readonly shutdown: GracefulShutdown,
    private readonly peers: PeerLoads,
  ) {}

  onApplicationBootstrap(): void {
    this.cancelSubscription = this.bus.subscribe(Subjects.inference.cancel, (cancel) => this.scheduler.cancel(cancel.completion_id));
    this.scheduler.onHeldChange(() => this.announce());
    this.consuming = this.shutdown.track(this.consume());
    onAbort(this.shutdown.stopping, () => this.stopPulling());
  }

  /** Stops pulling before the scheduler winds down its running completions. */
  async onModuleDestroy(): Promise<void> {
    this.stopPulling();
    this.cancelSubscription?.unsubscribe();
    await this.consuming;
  }

  /** Returns once no less loaded peer is asking for work (or the worker is stopping). */
  private async waitForTurn(): Promise<void> {
    while (!this.stopping && this.peers.lighterPeerAsking(this.scheduler.heldSequences)) await this.peers.nextChange();
  }

  /** One request for work, announced to the peers while it is outstanding. */
  private async ask(queue: WorkQueueReader<InferenceWork>): Promise<WorkMessage<InferenceWork> | null> {
    this.asking = true;
    this.announce();
    try {
      return await queue.next(1_000);
    } finally {
      this.asking = false;
      this.announce();
    }
  }

  private announce(): void {
    this.peers.announce(this.scheduler.heldSequences, this.asking);
  }

  /** Running completions go on (and can still be cancelled by their clients); no new one is taken. */
  private stopPulling(): void {
    this.stopping = true;
    this.scheduler.stopAdmitting();
  }

  private async consume(): Promise<void> {
    while (!this.stopping) {
      try {
        const queue = await this.bus.consume(WorkQueues.inference);
        while (!this.stopping) {
          await this.scheduler.whenSlotFree();
          await this.waitForTurn();
          if (this.stopping) return;
          const message = await this.ask(queue);
          if (!message) continue;
          if (this.stopping) {
            message.nak();
            return;
          }
          message.ack();
          const item = message.payload;
          if (item.deadline < Date.now()) {
            this.logger.warn(`dropping ${item.completion_id}: its caller stopped waiting`);
            continue;
          }
          await this.scheduler.admit(item);
        }
      } catch (err) {
        if (this.stopping) return;
        // NATS restarting, stream being recreated: wait and pull again.
        this.logger.warn(`inference queue unavailable (${(err as Error).message}); retrying`);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  }
}
