import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { generateSecret, hashSecret } from './api-key.secret';
import { ApiKeysRepository, StoredKey } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';

function repositoryWith(keys: Record<string, Partial<StoredKey>>) {
  const touched: string[] = [];
  const repo = {
    findByHash: async (hash: string) => {
      const key = keys[hash];
      return key ? ({ id: 'k1', name: 'n', prefix: 'ty_abc', entityId: 'e1', entityName: 'acme', lastUsedAt: null, revokedAt: null, ...key } as StoredKey) : null;
    },
    touch: async (id: string) => {
      touched.push(id);
    },
  } as unknown as ApiKeysRepository;
  return { service: new ApiKeysService(repo), touched };
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
