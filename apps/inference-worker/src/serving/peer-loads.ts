import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InferenceWorkerLoad, resolveWorkQueue, Subjects, WorkQueues } from '@trainyard/contracts';
import { EventSubscription, MessageBus } from '@trainyard/messaging';
import { InferenceWorkerConfig } from '../config/inference-worker.config';

/** A worker re-sends its load this often, so that its peers can tell it is still there. */
export const LOAD_HEARTBEAT_MS = 1_000;
/** A peer not heard from for this long is taken to be gone. */
export const PEER_FORGOTTEN_AFTER_MS = 3 * LOAD_HEARTBEAT_MS;

/**
 * The other inference workers' loads as last heard. Framework-free, so that the rule can be
 * tested on its own: a worker should leave the next completion to a peer that holds fewer
 * sequences and is already asking the queue for work, since that peer's request, waiting
 * longer, is the one JetStream serves first.
 */
export class LoadBoard {
  private readonly peers = new Map<string, { load: InferenceWorkerLoad; at: number }>();

  constructor(private readonly self: string) {}

  record(load: InferenceWorkerLoad, now: number): void {
    if (load.instance !== this.self) this.peers.set(load.instance, { load, at: now });
  }

  /** Whether a peer heard from recently holds fewer than `held` sequences and is asking for work. */
  lighterPeerAsking(held: number, now: number): boolean {
    for (const [instance, { load, at }] of this.peers) {
      if (now - at > PEER_FORGOTTEN_AFTER_MS) this.peers.delete(instance);
      else if (load.asking && load.held < held) return true;
    }
    return false;
  }
}

/**
 * Shares inference workers' loads over NATS (`inference.worker.load.v1.<queue's stream>`, no
 * queue group): each announces its own whenever it changes and every LOAD_HEARTBEAT_MS, and
 * hears those of the workers of its own queue only (deployments sharing a nats-server through
 * JETSTREAM_PREFIX never wait for each other). Plain publishes, nothing awaited: a lost
 * announcement only costs balance until the next one.
 */
@Injectable()
export class PeerLoads implements OnModuleInit, OnModuleDestroy {
  private readonly board: LoadBoard;
  /** The stream of this worker's queue: the peers it hears are those of the same queue. */
  private readonly stream: string;
  private last?: InferenceWorkerLoad;
  private subscription?: EventSubscription;
  private heartbeat?: NodeJS.Timeout;
  private readonly waiters = new Set<() => void>();

  constructor(
    @Inject(InferenceWorkerConfig) private readonly config: InferenceWorkerConfig,
    private readonly bus: MessageBus,
  ) {
    this.board = new LoadBoard(config.INSTANCE_ID);
    this.stream = resolveWorkQueue(WorkQueues.inference, bus.streamPrefix).stream;
  }

  onModuleInit(): void {
    const heard = (load: InferenceWorkerLoad) => {
      this.board.record(load, Date.now());
      this.wakeWaiters();
    };
    this.subscription = this.bus.subscribe(Subjects.inference.workerLoad, heard, { suffix: this.stream });
    this.heartbeat = setInterval(() => this.last && this.publish(this.last), LOAD_HEARTBEAT_MS);
  }

  onModuleDestroy(): void {
    clearInterval(this.heartbeat);
    this.wakeWaiters();
    if (!this.bus.isClosed()) {
      // Gone: peers stop deferring to it at once rather than after PEER_FORGOTTEN_AFTER_MS.
      this.publish({ instance: this.config.INSTANCE_ID, held: this.last?.held ?? 0, asking: false });
      this.subscription?.unsubscribe();
    }
  }

  announce(held: number, asking: boolean): void {
    if (this.last && this.last.held === held && this.last.asking === asking) return;
    this.last = { instance: this.config.INSTANCE_ID, held, asking };
    this.publish(this.last);
  }

  lighterPeerAsking(held: number): boolean {
    return this.board.lighterPeerAsking(held, Date.now());
  }

  /** Resolves at the next announcement heard from a peer, or after a heartbeat's time (a silent peer may have gone). */
  nextChange(): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, LOAD_HEARTBEAT_MS);
      this.waiters.add(wake);
    });
  }

  private wakeWaiters(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private publish(load: InferenceWorkerLoad): void {
    if (!this.bus.isClosed()) this.bus.publish(Subjects.inference.workerLoad, load, { suffix: this.stream });
  }
}
