/**
 * Lists of numbers as cache keys (webgpu-bind-groups.ts, webgpu-uniforms.ts): a hash to look a
 * list up by and an equality to confirm it, where a string key would be built and hashed at every
 * lookup, thousands of times a training step.
 */

/** FNV-1a over the numbers, each taken as a 32-bit word (a fraction by its integer part, NaN and Infinity as 0): lists that differ mostly hash apart, and sameNumbers decides. */
export function hashNumbers(values: readonly number[]): number {
  let hash = 0x811c9dc5;
  for (const value of values) hash = Math.imul(hash ^ value, 0x01000193);
  return hash;
}

/** Whether `a` and `b` hold the same numbers in the same order, NaN the same as NaN. */
export function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return false;
  return true;
}

/** A value kept by a NumberListLru, with the list of numbers it is kept by and their hash. */
export interface NumberListEntry<V> {
  readonly numbers: readonly number[];
  readonly hash: number;
  readonly value: V;
}

/**
 * Values kept by lists of numbers, the `capacity` most recently used: the bind groups a device
 * keeps (webgpu-bind-groups.ts) and the uniform buffers a backend keeps (webgpu-uniforms.ts).
 * `added` and `dropped` see each entry come and go (dropped: evicted, or deleted by its owner).
 */
export class NumberListLru<V> {
  /** Entries by hash (nearly always one a hash). */
  private readonly byHash = new Map<number, NumberListEntry<V>[]>();
  /** Every entry, least recently used first (a Set iterates in insertion order). */
  private readonly recency = new Set<NumberListEntry<V>>();
  hits = 0;
  misses = 0;

  constructor(
    readonly capacity: number,
    private readonly hooks: { added?: (entry: NumberListEntry<V>) => void; dropped?: (entry: NumberListEntry<V>) => void } = {},
  ) {}

  get size(): number {
    return this.recency.size;
  }

  /** The value kept by `numbers`, now the most recently used; else `make`'s, kept (past capacity, the least recently used goes). */
  keep(numbers: number[], make: () => V): V {
    const hash = hashNumbers(numbers);
    const same = this.byHash.get(hash);
    const found = same?.find((entry) => sameNumbers(entry.numbers, numbers));
    if (found) {
      this.hits++;
      this.recency.delete(found);
      this.recency.add(found);
      return found.value;
    }
    this.misses++;
    const entry: NumberListEntry<V> = { numbers, hash, value: make() };
    if (same) same.push(entry);
    else this.byHash.set(hash, [entry]);
    this.recency.add(entry);
    this.hooks.added?.(entry);
    if (this.recency.size > this.capacity) this.delete(this.recency.values().next().value as NumberListEntry<V>);
    return entry.value;
  }

  /** Drops `entry` (once; `dropped` sees it). */
  delete(entry: NumberListEntry<V>): void {
    if (!this.recency.delete(entry)) return;
    const same = this.byHash.get(entry.hash) as NumberListEntry<V>[];
    same.splice(same.indexOf(entry), 1);
    if (same.length === 0) this.byHash.delete(entry.hash);
    this.hooks.dropped?.(entry);
  }

  /** Drops every entry (`dropped` sees each). */
  dropAll(): void {
    for (const entry of [...this.recency]) this.delete(entry);
  }

  /** Forgets every entry, telling no one (what they hold went with their owner). */
  clear(): void {
    this.byHash.clear();
    this.recency.clear();
  }
}
