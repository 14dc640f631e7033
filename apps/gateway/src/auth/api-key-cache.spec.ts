import { ApiKeyCache, CachedKey } from './api-key-cache';

function keyOf(id: string): CachedKey {
  return { caller: { entityId: 'e1', entityName: 'acme', apiKeyId: id }, lastUsedAt: null };
}

function cacheWith(options: { maxEntries?: number; ttlMs?: number } = {}) {
  const clock = { now: 1_000_000 };
  const cache = new ApiKeyCache({ maxEntries: options.maxEntries ?? 100, ttlMs: options.ttlMs ?? 60_000, now: () => clock.now });
  cache.enable();
  const put = (hash: string, id = hash) => cache.set(hash, keyOf(id), cache.ticket());
  return { cache, clock, put };
}

describe('ApiKeyCache', () => {
  it('serves what was stored, by hash', () => {
    const { cache, put } = cacheWith();
    expect(put('h1', 'k1')).toBe(true);
    expect(cache.get('h1')?.caller.apiKeyId).toBe('k1');
    expect(cache.get('h2')).toBeUndefined();
  });

  it('holds at most maxEntries, dropping the least recently used', () => {
    const { cache, put } = cacheWith({ maxEntries: 3 });
    put('h1');
    put('h2');
    put('h3');
    cache.get('h1'); // h2 is now the least recently used
    put('h4');
    expect(cache.size).toBe(3);
    expect(cache.get('h2')).toBeUndefined();
    expect(['h1', 'h3', 'h4'].map((h) => cache.get(h)?.caller.apiKeyId)).toEqual(['h1', 'h3', 'h4']);
  });

  it('forgets a key ttlMs after it was stored, however often it is used', () => {
    const { cache, clock, put } = cacheWith({ ttlMs: 60_000 });
    put('h1');
    clock.now += 59_999;
    expect(cache.get('h1')).toBeDefined();
    clock.now += 1;
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('evicts by hash and by key id', () => {
    const { cache, put } = cacheWith();
    put('h1', 'k1');
    put('h2', 'k2');
    put('h3', 'k3');
    cache.evictHash('h1');
    cache.evictApiKey('k2');
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.get('h2')).toBeUndefined();
    expect(cache.get('h3')).toBeDefined();
  });

  it('does not store a lookup that raced an eviction, of that key or any other', () => {
    const { cache } = cacheWith();
    const ticket = cache.ticket();
    cache.evictHash('h-other');
    expect(cache.set('h1', keyOf('k1'), ticket)).toBe(false);
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.set('h1', keyOf('k1'), cache.ticket())).toBe(true);
  });

  it('serves and stores nothing while disabled, and comes back empty', () => {
    const { cache, put } = cacheWith();
    put('h1');
    const ticket = cache.ticket();
    cache.disable();
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.ticket()).toBeUndefined();
    expect(cache.set('h2', keyOf('k2'), ticket)).toBe(false);
    cache.enable();
    expect(cache.set('h3', keyOf('k3'), ticket)).toBe(false); // read before the gap: not trusted
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('never turns on with a TTL of 0', () => {
    const { cache, put } = cacheWith({ ttlMs: 0 });
    expect(cache.isOff).toBe(true);
    expect(cache.isEnabled).toBe(false);
    expect(put('h1')).toBe(false);
    expect(cache.get('h1')).toBeUndefined();
  });
});
