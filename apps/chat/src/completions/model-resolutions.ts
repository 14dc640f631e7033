import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ModelsChanged, ResolveModelReply, ResolveModelRequest, Subjects } from '@trainyard/contracts';
import { NATS_CONNECTION, RpcClient } from '@trainyard/messaging';
import { Events, JSONCodec, NatsConnection, Subscription } from 'nats';
import { ChatConfig } from '../config/chat.config';
import { ResolutionCache, resolutionKey } from './resolution-cache';

const changes = JSONCodec<ModelsChanged>();

/** A hit waits this long at most for its fence; past it, the registry is asked as on a miss. */
export const FENCE_TIMEOUT_MS = 1_000;

type FenceOutcome = 'passed' | 'failed' | 'late' | 'lost';

/**
 * Model names to what serves them, as the registry answers `registry.model.resolve.v1`,
 * cached so that most completions skip that round trip, yet never served stale: a new
 * checkpoint is served from the first request after it is recorded, and a deleted checkpoint
 * or model stops resolving at once. Only answers are cached, never "not found", so a model
 * created later resolves at once too.
 *
 * How: the registry announces every change on `registry.models.changed.v1` and has the NATS
 * server take the announcement (publish, then flush) before it acknowledges the change. Each
 * replica subscribes without a queue group and drops the model's names when it reads one.
 * Completion requests reach this process on another connection (the Nest server's), which
 * could be read first, so a hit is served only after a fence: a flush on the connection the
 * announcements arrive on. The server answers that PING after everything it queued for this
 * connection before, which includes every announcement of a change acknowledged before the
 * request was sent; the subscription callback runs as each message is parsed, before the PONG
 * is, so by the time the fence resolves the eviction is done. The fence is one round trip to
 * the local NATS server, instead of one through the registry and its database.
 *
 * Announcements are missed while the connection is down, so the cache is trusted only while
 * the connection has stayed up since the subscription was confirmed (by a flush after it was
 * made, at start and after each reconnect): until then it is empty and bypassed.
 */
@Injectable()
export class ModelResolutions implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ModelResolutions.name);
  private readonly cache: ResolutionCache;
  private readonly enabled: boolean;
  private subscription?: Subscription;
  private closed = false;
  /** The subscription is confirmed and the connection has not dropped since: entries may be served and stored. */
  private live = false;
  /** Bumped by every eviction and every change of `live`: an answer is stored only if nothing happened while it was asked for. */
  private epoch = 0;
  /** Bumped by every attempt to confirm the subscription and every loss, so that only the latest attempt turns the cache on. */
  private confirmations = 0;
  /** How to end each fence in flight: on a loss they give up at once. */
  private readonly fences = new Set<(outcome: FenceOutcome) => void>();

  constructor(
    @Inject(ChatConfig) config: ChatConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly rpc: RpcClient,
  ) {
    this.enabled = config.MODEL_RESOLUTION_CACHE_TTL_MS > 0;
    this.cache = new ResolutionCache(config.MODEL_RESOLUTION_CACHE_SIZE, config.MODEL_RESOLUTION_CACHE_TTL_MS);
  }

  onApplicationBootstrap(): void {
    if (!this.enabled) return;
    this.subscription = this.nc.subscribe(Subjects.registry.modelsChanged.name, {
      // A callback, not an iterator: it runs while the message is parsed, ahead of any later PONG.
      callback: (err, msg) => {
        if (err) {
          this.logger.warn(`Model change announcements stopped (${err.message}); resolving every model through the registry`);
          this.closed = true;
          this.down();
          return;
        }
        this.apply(msg.data);
      },
    });
    this.watch().catch((err: Error) => {
      this.logger.warn(`Stopped watching the NATS connection (${err.message}); resolving every model through the registry`);
      this.closed = true;
      this.down();
    });
    void this.confirm();
  }

  onModuleDestroy(): void {
    this.closed = true;
    this.down();
    this.subscription?.unsubscribe();
  }

  async resolve(request: ResolveModelRequest): Promise<ResolveModelReply> {
    if (!this.enabled) return this.ask(request);
    const key = resolutionKey(request);
    if (this.live && this.cache.get(key) && (await this.fence())) {
      // Read again: the fence may have brought the eviction of what was there.
      const hit = this.live ? this.cache.get(key) : undefined;
      if (hit) return hit;
    }
    const epoch = this.epoch;
    const reply = await this.ask(request);
    if (this.live && this.epoch === epoch) this.cache.set(key, reply);
    return reply;
  }

  private ask(request: ResolveModelRequest): Promise<ResolveModelReply> {
    return this.rpc.request(Subjects.registry.resolveModel, request);
  }

  private apply(data: Uint8Array): void {
    this.epoch++;
    let modelId: unknown;
    try {
      modelId = changes.decode(data).model_id;
    } catch {
      modelId = undefined;
    }
    if (typeof modelId === 'string') this.cache.evictModel(modelId);
    else this.cache.clear(); // unreadable: assume it could be about anything
  }

  /** True once this connection has read everything the NATS server had queued for it when the fence began. */
  private fence(): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const finish = (outcome: FenceOutcome) => {
        if (!this.fences.delete(finish)) return;
        clearTimeout(timer);
        if (outcome === 'failed' || outcome === 'late') {
          // Something is wrong with the connection even if no disconnect was reported yet.
          this.logger.warn(`A flush to NATS ${outcome === 'late' ? `took over ${FENCE_TIMEOUT_MS} ms` : 'failed'}; resolving through the registry until it answers again`);
          this.down();
          void this.confirm();
        }
        resolve(outcome === 'passed');
      };
      this.fences.add(finish);
      const timer = setTimeout(() => finish('late'), FENCE_TIMEOUT_MS);
      this.nc.flush().then(
        () => finish('passed'),
        () => finish('failed'),
      );
    });
  }

  private async watch(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === Events.Disconnect) {
        if (this.live) this.logger.warn('NATS disconnected: resolving every model through the registry until reconnected');
        this.down();
      } else if (status.type === Events.Reconnect) {
        void this.confirm();
      }
    }
  }

  /** Turns the cache on once the NATS server has the subscription, unless something happened meanwhile. */
  private async confirm(): Promise<void> {
    const attempt = ++this.confirmations;
    try {
      await this.nc.flush();
    } catch {
      return; // the next reconnect confirms again
    }
    if (attempt !== this.confirmations || this.closed || this.live) return;
    this.cache.clear();
    this.epoch++;
    this.live = true;
  }

  private down(): void {
    this.confirmations++;
    this.cache.clear();
    this.epoch++;
    this.live = false;
    for (const finish of [...this.fences]) finish('lost');
  }
}
