export interface ExpiringLruOptions<V> {
  /** Past this many entries, the least recently used is dropped. */
  maxEntries: number;
  /** An entry is gone this long after it was set, however often it is read. */
  ttlMs: number;
  /** Milliseconds, as Date.now; tests pass their own. */
  now?: () => number;
  /** Told of every entry that leaves by delete, expiry, replacement or the size bound (not by clear). */
  onDelete?: (key: string, value: V) => void;
}

/**
 * A string-keyed map in memory, bounded in size (least recently used out first) and in age
 * (ttlMs from when each entry was set). A Map keeps insertion order, so reading an entry
 * moves it to the end and the first key is always the least recently used.
 */
export class ExpiringLru<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private readonly now: () => number;

  constructor(private readonly options: ExpiringLruOptions<V>) {
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.expiresAt <= this.now()) {
      this.options.onDelete?.(key, entry.value);
      return undefined;
    }
    this.entries.set(key, entry); // most recently used last
    return entry.value;
  }

  set(key: string, value: V): void {
    this.delete(key);
    this.entries.set(key, { value, expiresAt: this.now() + this.options.ttlMs });
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.options.maxEntries) break;
      this.delete(oldest);
    }
  }

  delete(key: string): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    this.options.onDelete?.(key, entry.value);
    return true;
  }

  clear(): void {
    this.entries.clear();
  }

  /** Every entry, expired ones included, least recently used first; reading does not move them. */
  *[Symbol.iterator](): IterableIterator<[string, V]> {
    for (const [key, { value }] of this.entries) yield [key, value];
  }
}
