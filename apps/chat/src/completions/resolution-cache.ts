import type { ResolveModelReply, ResolveModelRequest } from '@trainyard/contracts';

interface Entry {
  reply: ResolveModelReply;
  expiresAt: number;
}

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
  /** In use order: the first key is the least recently used. */
  private readonly entries = new Map<string, Entry>();
  private readonly keysByModel = new Map<string, Set<string>>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): ResolveModelReply | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.now() >= entry.expiresAt) {
      this.delete(key, entry);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.reply;
  }

  set(key: string, reply: ResolveModelReply): void {
    const previous = this.entries.get(key);
    if (previous) this.delete(key, previous);
    this.entries.set(key, { reply, expiresAt: this.now() + this.ttlMs });
    if (reply.model_id !== null) {
      const keys = this.keysByModel.get(reply.model_id) ?? new Set<string>();
      keys.add(key);
      this.keysByModel.set(reply.model_id, keys);
    }
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries) break;
      this.delete(oldest, entry);
    }
  }

  /** Drops every name that resolved to this model. */
  evictModel(modelId: string): void {
    for (const key of this.keysByModel.get(modelId) ?? []) this.entries.delete(key);
    this.keysByModel.delete(modelId);
  }

  clear(): void {
    this.entries.clear();
    this.keysByModel.clear();
  }

  private delete(key: string, entry: Entry): void {
    this.entries.delete(key);
    const modelId = entry.reply.model_id;
    if (modelId === null) return;
    const keys = this.keysByModel.get(modelId);
    keys?.delete(key);
    if (keys?.size === 0) this.keysByModel.delete(modelId);
  }
}
