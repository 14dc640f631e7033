import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ModelsChanged, ResolveModelReply, ResolveModelRequest, Subjects } from '@trainyard/contracts';
import { EventSubscription, MessageBus, RequestConnection, RpcClient } from '@trainyard/messaging';
import { ChatConfig } from '../config/chat.config';
import { ResolutionCache, resolutionKey } from './resolution-cache';

/**
 * Model names to what serves them, as the registry answers `registry.model.resolve.v1`,
 * cached so that most completions skip that round trip, yet never served stale: a new
 * checkpoint is served from the first request after it is recorded, and a deleted checkpoint
 * or model stops resolving at once. Only answers are cached, never "not found", so a model
 * created later resolves at once too.
 *
 * How: the registry announces every change on `registry.models.changed.v1` and has the NATS
 * server take the announcement (publish, then flush) before it acknowledges the change. Each
 * replica subscribes without a queue group, on the connection its completion requests arrive
 * on (RequestConnection), and drops the model's names in the subscription callback itself.
 * The server writes to that connection in the order it routed, so the announcement of any
 * change acknowledged before a request was sent comes before that request; the callback runs
 * as the announcement is parsed, before the request's own callback, let alone its handler.
 * A hit can then be served at once, without a round trip.
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
  private subscription?: EventSubscription;
  private closed = false;
  /** The subscription is confirmed and the connection has not dropped since: entries may be served and stored. */
  private live = false;
  /** Bumped by every eviction and every change of `live`: an answer is stored only if nothing happened while it was asked for. */
  private epoch = 0;
  /** Bumped by every attempt to confirm the subscription and every loss, so that only the latest attempt turns the cache on. */
  private confirmations = 0;

  constructor(
    @Inject(ChatConfig) config: ChatConfig,
    private readonly requests: RequestConnection,
    private readonly rpc: RpcClient,
  ) {
    this.enabled = config.MODEL_RESOLUTION_CACHE_TTL_MS > 0;
    this.cache = new ResolutionCache(config.MODEL_RESOLUTION_CACHE_SIZE, config.MODEL_RESOLUTION_CACHE_TTL_MS);
  }

  onApplicationBootstrap(): void {
    if (this.enabled) this.requests.whenConnected((bus) => this.listen(bus));
  }

  onModuleDestroy(): void {
    this.closed = true;
    this.down();
    this.subscription?.unsubscribe();
  }

  async resolve(request: ResolveModelRequest): Promise<ResolveModelReply> {
    if (!this.enabled) return this.ask(request);
    const key = resolutionKey(request);
    const hit = this.live ? this.cache.get(key) : undefined;
    if (hit) return hit;
    const epoch = this.epoch;
    const reply = await this.ask(request);
    if (this.live && this.epoch === epoch) this.cache.set(key, reply);
    return reply;
  }

  private listen(bus: MessageBus): void {
    if (this.closed) return;
    // The handler runs as the message is parsed, ahead of any request read after it.
    this.subscription = bus.subscribe(Subjects.registry.modelsChanged, (change) => this.apply(change), {
      onError: (err) => {
        this.logger.warn(`Model change announcements stopped (${err.message}); resolving every model through the registry`);
        this.closed = true;
        this.down();
      },
      // Unreadable: assume it could be about anything.
      onUndecodable: () => this.apply(undefined),
    });
    this.watch(bus).catch((err: Error) => {
      this.logger.warn(`Stopped watching the NATS connection (${err.message}); resolving every model through the registry`);
      this.closed = true;
      this.down();
    });
    void this.confirm(bus);
  }

  private ask(request: ResolveModelRequest): Promise<ResolveModelReply> {
    return this.rpc.request(Subjects.registry.resolveModel, request);
  }

  private apply(change: ModelsChanged | undefined): void {
    this.epoch++;
    const modelId: unknown = (change as Partial<ModelsChanged> | null | undefined)?.model_id;
    if (typeof modelId === 'string') this.cache.evictModel(modelId);
    else this.cache.clear(); // unreadable: assume it could be about anything
  }

  private async watch(bus: MessageBus): Promise<void> {
    for await (const change of bus.connectionChanges()) {
      if (change === 'disconnect') {
        if (this.live) this.logger.warn('NATS disconnected: resolving every model through the registry until reconnected');
        this.down();
      } else {
        void this.confirm(bus);
      }
    }
  }

  /** Turns the cache on once the NATS server has the subscription, unless something happened meanwhile. */
  private async confirm(bus: MessageBus): Promise<void> {
    const attempt = ++this.confirmations;
    try {
      await bus.flush();
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
  }
}
