import { ErrorCode, ServiceError } from '@trainyard/contracts';
import type { GatewayConfig } from '../config/gateway.config';
import type { ApiKeysService } from './api-keys.service';
import { csrfTokenFor, hashSessionToken } from './console-session.token';
import type { ConsoleSessionsRepository, StoredSession } from './console-sessions.repository';
import { ConsoleSessionsService } from './console-sessions.service';

function serviceWith() {
  const sessions = new Map<string, StoredSession>();
  const repo = {
    create: async (apiKeyId: string, tokenHash: string, expiresAt: Date) => {
      sessions.set(tokenHash, { id: `s${sessions.size + 1}`, apiKeyId, entityId: 'e1', entityName: 'acme', expiresAt });
    },
    findLive: async (hash: string, now: Date) => {
      const s = sessions.get(hash);
      return s && s.expiresAt > now ? s : null;
    },
    deleteExpired: async () => 0,
    delete: async (id: string) => {
      for (const [hash, s] of sessions) if (s.id === id) sessions.delete(hash);
    },
  } as unknown as ConsoleSessionsRepository;
  const apiKeys = {
    verify: async (secret: string) => {
      if (secret !== 'ty_good') throw new ServiceError(ErrorCode.Unauthorized, 'Unknown API key');
      return { entityId: 'e1', entityName: 'acme', apiKeyId: 'k1' };
    },
  } as unknown as ApiKeysService;
  const config = { CONSOLE_SESSION_TTL_SECONDS: 3600 } as GatewayConfig;
  return { service: new ConsoleSessionsService(apiKeys, repo, config), sessions };
}

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (err: ServiceError) => err,
  );
}

describe('ConsoleSessionsService', () => {
  it('signs in with a good key, storing only the hash of the session token', async () => {
    const { service, sessions } = serviceWith();
    const session = await service.signIn(' ty_good ');
    expect(session.entityName).toBe('acme');
    expect(session.csrfToken).toBe(csrfTokenFor(session.token));
    expect([...sessions.keys()]).toEqual([hashSessionToken(session.token)]);
    expect(session.expiresAt.getTime() - Date.now()).toBeGreaterThan(3500_000);
  });

  it('refuses a bad key at sign-in and makes no session', async () => {
    const { service, sessions } = serviceWith();
    expect((await failure(service.signIn('ty_bad'))).code).toBe(ErrorCode.Unauthorized);
    expect(sessions.size).toBe(0);
  });

  it('lets reads through on the cookie alone, and changes only with the CSRF token', async () => {
    const { service } = serviceWith();
    const { token, csrfToken } = await service.signIn('ty_good');
    await expect(service.authenticate(token, { method: 'GET', csrfToken: undefined })).resolves.toMatchObject({ entityId: 'e1', apiKeyId: 'k1', sessionId: 's1' });
    await expect(service.authenticate(token, { method: 'POST', csrfToken })).resolves.toMatchObject({ sessionId: 's1' });
    expect((await failure(service.authenticate(token, { method: 'POST', csrfToken: undefined }))).code).toBe(ErrorCode.Forbidden);
    expect((await failure(service.authenticate(token, { method: 'DELETE', csrfToken: 'forged' }))).code).toBe(ErrorCode.Forbidden);
  });

  it('refuses a missing, unknown or signed-out session with 401', async () => {
    const { service } = serviceWith();
    const { token } = await service.signIn('ty_good');
    expect((await failure(service.authenticate(undefined, { method: 'GET', csrfToken: undefined }))).code).toBe(ErrorCode.Unauthorized);
    expect((await failure(service.authenticate('made-up', { method: 'GET', csrfToken: undefined }))).code).toBe(ErrorCode.Unauthorized);
    await service.signOut('s1');
    expect((await failure(service.describe(token))).code).toBe(ErrorCode.Unauthorized);
  });
});
