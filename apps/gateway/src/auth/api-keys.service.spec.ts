import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { ApiKeyCache } from './api-key-cache';
import { generateSecret, hashSecret } from './api-key.secret';
import { ApiKeysRepository, StoredKey } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';

/** A repository over rows in memory, counting lookups; rows can be changed behind the service's back. */
function repositoryWith(keys: Record<string, Partial<StoredKey>>, cache?: ApiKeyCache) {
  const touched: string[] = [];
  const lookups: string[] = [];
  const rows = new Map<string, StoredKey>(
    Object.entries(keys).map(([hash, key], i) => [
      hash,
      { id: `k${i + 1}`, name: 'n', prefix: 'ty_abc', entityId: 'e1', entityName: 'acme', createdAt: new Date(0), lastUsedAt: null, revokedAt: null, ...key },
    ]),
  );
  const byId = (id: string) => [...rows.values()].find((k) => k.id === id);
  const repo = {
    findByHash: async (hash: string) => {
      lookups.push(hash);
      const key = rows.get(hash);
      return key ? { ...key } : null;
    },
    touch: async (id: string, at: Date) => {
      touched.push(id);
      const key = byId(id);
      if (key) key.lastUsedAt = at;
    },
    revoke: async (id: string) => {
      const key = byId(id);
      if (!key || key.revokedAt) return [];
      key.revokedAt = new Date();
      return [{ ...key }];
    },
    revokeOwned: async (entityId: string, id: string) => {
      const key = byId(id);
      if (!key || key.entityId !== entityId) return null;
      key.revokedAt ??= new Date();
      return { ...key };
    },
  } as unknown as ApiKeysRepository;
  return { service: new ApiKeysService(repo, cache), touched, lookups, rows };
}

function enabledCache(options: { ttlMs?: number; now?: () => number } = {}): ApiKeyCache {
  const cache = new ApiKeyCache({ maxEntries: 100, ttlMs: options.ttlMs ?? 60_000, now: options.now });
  cache.enable();
  return cache;
}

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (err: ServiceError) => err,
  );
}

describe('ApiKeysService.authenticate', () => {
  const { secret, hash } = generateSecret();

  it('resolves a valid key to its entity and records its use', async () => {
    const { service, touched } = repositoryWith({ [hash]: {} });
    await expect(service.authenticate(`Bearer ${secret}`)).resolves.toEqual({ entityId: 'e1', entityName: 'acme', apiKeyId: 'k1' });
    expect(touched).toEqual(['k1']);
  });

  it.each([
    [undefined, /^Missing API key/],
    ['Basic abc', /^Malformed Authorization header/],
    ['Bearer', /^Malformed Authorization header/],
    ['Bearer ty_unknown', /^Unknown API key$/],
  ])('refuses %p with a 401 that says why', async (header, message) => {
    const { service } = repositoryWith({ [hash]: {} });
    const error = await failure(service.authenticate(header));
    expect(error.code).toBe(ErrorCode.Unauthorized);
    expect(error.message).toMatch(message);
  });

  it('refuses a revoked key, saying it was revoked', async () => {
    const { service } = repositoryWith({ [hash]: { revokedAt: new Date() } });
    const error = await failure(service.authenticate(`Bearer ${secret}`));
    expect(error.message).toBe('API key ty_abc... was revoked');
  });
});

describe('ApiKeysService with the key cache', () => {
  const { secret, hash } = generateSecret();
  const caller = { entityId: 'e1', entityName: 'acme', apiKeyId: 'k1' };

  it('serves a key it has verified from memory, without asking the repository again', async () => {
    const { service, lookups } = repositoryWith({ [hash]: {} }, enabledCache());
    await expect(service.verify(secret)).resolves.toEqual(caller);
    await expect(service.verify(secret)).resolves.toEqual(caller);
    await expect(service.authenticate(`Bearer ${secret}`)).resolves.toEqual(caller);
    expect(lookups).toEqual([hash]);
  });

  it('refuses a key revoked through the service on the very next request, and only that key', async () => {
    const other = generateSecret();
    const { service, lookups } = repositoryWith({ [hash]: {}, [other.hash]: {} }, enabledCache());
    await service.verify(secret);
    await service.verify(other.secret);

    expect((await failure(service.revokeOwned('e1', '00000000-0000-4000-8000-000000000001'))).code).toBe(ErrorCode.NotFound);

    await service.revoke('k1');
    expect((await failure(service.verify(secret))).message).toBe('API key ty_abc... was revoked');
    await service.verify(other.secret);
    expect(lookups).toEqual([hash, other.hash, hash]);
  });

  it('refuses a key revoked by revokeOwned on the very next request', async () => {
    const { service } = repositoryWith({ [hash]: { id: '3f1c7a52-9a7e-4d2b-8c4e-0c6f3b1e2a90' } }, enabledCache());
    await service.verify(secret);
    await service.revokeOwned('e1', '3f1c7a52-9a7e-4d2b-8c4e-0c6f3b1e2a90');
    expect((await failure(service.verify(secret))).message).toMatch(/was revoked$/);
  });

  it('never caches an unknown or a revoked key', async () => {
    const revoked = generateSecret();
    const cache = enabledCache();
    const { service, lookups } = repositoryWith({ [revoked.hash]: { revokedAt: new Date() } }, cache);
    for (let i = 0; i < 3; i++) {
      await failure(service.verify(`ty_random_${i}`));
      await failure(service.verify(revoked.secret));
    }
    expect(cache.size).toBe(0);
    expect(lookups).toHaveLength(6);
  });

  it('asks the repository every time while the cache is disabled (the listener is not connected)', async () => {
    const cache = enabledCache();
    const { service, lookups, rows } = repositoryWith({ [hash]: {} }, cache);
    await service.verify(secret);
    cache.disable();
    await service.verify(secret);
    await service.verify(secret);
    expect(lookups).toHaveLength(3);
    // So a revocation the listener could not hear of is seen at once.
    (rows.get(hash) as StoredKey).revokedAt = new Date();
    expect((await failure(service.verify(secret))).message).toMatch(/was revoked$/);
  });

  it('drops a key the listener evicts, and does not keep a lookup that raced the eviction', async () => {
    const cache = enabledCache();
    const { service, lookups, rows } = repositoryWith({ [hash]: {} }, cache);
    await service.verify(secret);
    (rows.get(hash) as StoredKey).revokedAt = new Date();
    cache.evictHash(hash);
    expect((await failure(service.verify(secret))).code).toBe(ErrorCode.Unauthorized);
    expect(lookups).toHaveLength(2);

    // A lookup in flight read the key as valid; the change's notification came before its answer.
    (rows.get(hash) as StoredKey).revokedAt = null;
    const inFlight = service.verify(secret);
    cache.evictHash(hash);
    await inFlight;
    expect(cache.size).toBe(0);
  });

  it('still records key use at most once a minute when keys are served from memory', async () => {
    const clock = { now: Date.now() };
    jest.useFakeTimers({ now: clock.now, doNotFake: ['nextTick', 'setImmediate'] });
    try {
      const { service, touched, lookups } = repositoryWith({ [hash]: {} }, enabledCache({ ttlMs: 600_000, now: () => Date.now() }));
      await service.verify(secret);
      await service.verify(secret);
      expect(touched).toEqual(['k1']);
      jest.setSystemTime(clock.now + 30_000);
      await service.verify(secret);
      expect(touched).toEqual(['k1']);
      jest.setSystemTime(clock.now + 60_001);
      await service.verify(secret);
      expect(touched).toEqual(['k1', 'k1']);
      expect(lookups).toHaveLength(1);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('API key secrets', () => {
  it('are long, random, and stored only as their SHA-256', () => {
    const a = generateSecret();
    const b = generateSecret();
    expect(a.secret).toMatch(/^ty_[A-Za-z0-9_-]{43}$/);
    expect(a.secret).not.toBe(b.secret);
    expect(a.hash).toBe(hashSecret(a.secret));
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.hash).not.toContain(a.secret);
    expect(a.prefix).toBe(a.secret.slice(0, 10));
  });
});
