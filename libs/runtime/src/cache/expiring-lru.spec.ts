import { ExpiringLru } from './expiring-lru';

function lru(options: { maxEntries?: number; ttlMs?: number } = {}) {
  const clock = { now: 1_000 };
  const deleted: string[] = [];
  const cache = new ExpiringLru<string>({
    maxEntries: options.maxEntries ?? 10,
    ttlMs: options.ttlMs ?? 1_000,
    now: () => clock.now,
    onDelete: (key, value) => deleted.push(`${key}=${value}`),
  });
  return { cache, clock, deleted };
}

describe('ExpiringLru', () => {
  it('drops the least recently used past maxEntries, reads counting as use', () => {
    const { cache, deleted } = lru({ maxEntries: 2 });
    cache.set('a', '1');
    cache.set('b', '2');
    expect(cache.get('a')).toBe('1'); // b is now the least recently used
    cache.set('c', '3');
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a'), cache.get('c')]).toEqual(['1', '3']);
    expect(deleted).toEqual(['b=2']);
  });

  it('forgets an entry ttlMs after it was set, however often it is read', () => {
    const { cache, clock, deleted } = lru({ ttlMs: 1_000 });
    cache.set('a', '1');
    clock.now += 999;
    expect(cache.get('a')).toBe('1');
    clock.now += 1;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(deleted).toEqual(['a=1']);
  });

  it('tells of a replaced or deleted entry, not of a clear', () => {
    const { cache, deleted } = lru();
    cache.set('a', '1');
    cache.set('a', '2');
    expect(cache.delete('a')).toBe(true);
    expect(cache.delete('a')).toBe(false);
    cache.set('b', '3');
    cache.clear();
    expect(cache.size).toBe(0);
    expect(deleted).toEqual(['a=1', 'a=2']);
  });

  it('lists its entries without moving them', () => {
    const { cache } = lru({ maxEntries: 2 });
    cache.set('a', '1');
    cache.set('b', '2');
    expect([...cache]).toEqual([['a', '1'], ['b', '2']]);
    cache.set('c', '3');
    expect([...cache].map(([key]) => key)).toEqual(['b', 'c']);
  });
});
