import type { ResolveModelReply, ResolveModelRequest } from '@trainyard/contracts';
import { ExpiringLru } from '@trainyard/runtime';

/**
 * What a model name resolved to for a caller. The entity's name is part of it because the
 * registry checks the name against it (`wandb-artifact:///{entity}/...`).
 */
export function resolutionKey(request: ResolveModelRequest): string {
  return `${request.entity_id}\u0000${request.entity_name}\u0000${request.model}`;
}

/**
 * Successful resolutions, least recently used dropped first past `maxEntries`, none older
 * than `ttlMs`. Indexed by model id, so that a change to a model drops every name that led
 * to it (`x`, `x:latest`, `x:step3`, with or without the scheme) at once.
 */
export class ResolutionCache {
  private readonly entries: ExpiringLru<ResolveModelReply>;
  private readonly keysByModel = new Map<string, Set<string>>();

  constructor(maxEntries: number, ttlMs: number, now: () => number = Date.now) {
    this.entries = new ExpiringLru({ maxEntries, ttlMs, now, onDelete: (key, reply) => this.unindex(key, reply) });
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): ResolveModelReply | undefined {
    return this.entries.get(key);
  }

  set(key: string, reply: ResolveModelReply): void {
    this.entries.set(key, reply);
    if (reply.model_id !== null) {
      const keys = this.keysByModel.get(reply.model_id) ?? new Set<string>();
      keys.add(key);
      this.keysByModel.set(reply.model_id, keys);
    }
  }

  /** Drops every name that resolved to this model. */
  evictModel(modelId: string): void {
    for (const key of this.keysByModel.get(modelId) ?? []) this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
    this.keysByModel.clear();
  }

  private unindex(key: string, reply: ResolveModelReply): void {
    if (reply.model_id === null) return;
    const keys = this.keysByModel.get(reply.model_id);
    keys?.delete(key);
    if (keys?.size === 0) this.keysByModel.delete(reply.model_id);
  }
}
