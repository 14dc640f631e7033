import { ExpiringLru } from '@trainyard/runtime';
import type { Caller } from './caller';

/** A key that verified OK: who it stands for, and when its use was last written. */
export interface CachedKey {
  readonly caller: Caller;
  /** Mutable: the service moves it on when it writes last_used_at for a cached hit. */
  lastUsedAt: Date | null;
}

export interface ApiKeyCacheOptions {
  maxEntries: number;
  /** 0: the cache is off and never turns on. */
  ttlMs: number;
  /** Milliseconds, as Date.now; tests pass their own. */
  now?: () => number;
}

/**
 * Verified API keys by the SHA-256 of their secret, in this process's memory: least recently
 * used first out, each for at most ttlMs. Only keys that verified OK go in, so unknown or
 * revoked keys sent at any rate cannot fill it.
 *
 * It serves nothing while disabled. ApiKeyChangesListener enables it only while it is
 * listening for changes to keys, and disables it (which empties it) the moment it is not.
 *
 * A lookup that raced a change must not put back what the change dropped: a caller takes a
 * ticket before it reads the database and may store what it read only with that ticket, which
 * every eviction, clear or disable invalidates.
 */
export class ApiKeyCache {
  private readonly entries: ExpiringLru<CachedKey>;
  private enabled = false;
  private generation = 0;

  constructor(private readonly options: ApiKeyCacheOptions) {
    this.entries = new ExpiringLru(options);
  }

  /** Off by configuration (a TTL of 0): nothing should listen for it. */
  get isOff(): boolean {
    return this.options.ttlMs <= 0;
  }

  get isEnabled(): boolean {
    return this.enabled;
  }

  get size(): number {
    return this.entries.size;
  }

  enable(): void {
    if (this.isOff) return;
    this.clear();
    this.enabled = true;
  }

  /** Empties the cache and serves nothing until enabled again. */
  disable(): void {
    this.enabled = false;
    this.clear();
  }

  get(hash: string): CachedKey | undefined {
    return this.enabled ? this.entries.get(hash) : undefined;
  }

  /** Take before reading the database; undefined while disabled (what is read then is not stored). */
  ticket(): number | undefined {
    return this.enabled ? this.generation : undefined;
  }

  /** Stores a verified key if nothing was evicted since the ticket was taken; says whether it did. */
  set(hash: string, key: CachedKey, ticket: number | undefined): boolean {
    if (!this.enabled || ticket !== this.generation) return false;
    this.entries.set(hash, { caller: key.caller, lastUsedAt: key.lastUsedAt });
    return true;
  }

  evictHash(hash: string): void {
    this.generation++;
    this.entries.delete(hash);
  }

  /** By key id, for revocations that know the key but not its hash. Rare: a scan is fine. */
  evictApiKey(apiKeyId: string): void {
    this.generation++;
    for (const [hash, entry] of [...this.entries]) {
      if (entry.caller.apiKeyId === apiKeyId) this.entries.delete(hash);
    }
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}
