import { Test, TestingModule } from '@nestjs/testing';
import { DbModule, PrismaService } from '@trainyard/db';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase } from '@trainyard/testing';
import { ApiKeysRepository, StoredKey } from '../src/auth/api-keys.repository';
import { ConsoleSessionsRepository } from '../src/auth/console-sessions.repository';

describe('console sessions against real Postgres', () => {
  let db: { url: string; drop(): Promise<void> };
  let moduleRef: TestingModule;
  let sessions: ConsoleSessionsRepository;
  let keys: ApiKeysRepository;
  let prisma: PrismaService;

  const now = new Date('2026-06-01T12:00:00Z');
  const later = (ms: number) => new Date(now.getTime() + ms);
  let serial = 0;
  const newKey = (entity = 'acme'): Promise<StoredKey> => {
    serial++;
    return keys.create(entity, `key ${serial}`, `key-hash-${serial}`, `ty_${serial}`);
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    moduleRef = await Test.createTestingModule({
      imports: [ProcessHealthModule, DbModule.forRoot(db.url)],
      providers: [ApiKeysRepository, ConsoleSessionsRepository],
    }).compile();
    sessions = moduleRef.get(ConsoleSessionsRepository);
    keys = moduleRef.get(ApiKeysRepository);
    prisma = moduleRef.get(PrismaService);
  });

  afterAll(async () => {
    await moduleRef?.close();
    await db?.drop();
  });

  it("finds a live session by its token's hash, with the entity of the key it signed in with", async () => {
    const key = await newKey('acme');
    await sessions.create(key.id, 'token-live', later(60_000));
    const found = await sessions.findLive('token-live', now);
    expect(found).toEqual({ id: expect.any(String), apiKeyId: key.id, entityId: key.entityId, entityName: 'acme', expiresAt: later(60_000) });
    expect(await sessions.findLive('token-unknown', now)).toBeNull();
  });

  it('does not find a session at or after its expiry', async () => {
    const key = await newKey();
    await sessions.create(key.id, 'token-expiring', later(1_000));
    expect(await sessions.findLive('token-expiring', later(999))).not.toBeNull();
    expect(await sessions.findLive('token-expiring', later(1_000))).toBeNull();
  });

  it('ends every session of a key once the key is revoked', async () => {
    const key = await newKey();
    await sessions.create(key.id, 'token-revoked', later(60_000));
    await keys.revoke(key.id);
    expect(await sessions.findLive('token-revoked', now)).toBeNull();
  });

  it('refuses a second session with the same token hash', async () => {
    const key = await newKey();
    await sessions.create(key.id, 'token-once', later(60_000));
    await expect(sessions.create(key.id, 'token-once', later(60_000))).rejects.toThrow();
  });

  it('deletes one session (twice is harmless), and only expired ones when cleaning up', async () => {
    const key = await newKey('cleanup');
    await sessions.create(key.id, 'token-signout', later(60_000));
    const session = await sessions.findLive('token-signout', now);
    if (!session) throw new Error('expected a live session');
    await sessions.delete(session.id);
    await sessions.delete(session.id);
    expect(await sessions.findLive('token-signout', now)).toBeNull();

    await sessions.create(key.id, 'token-old-1', later(-2_000));
    await sessions.create(key.id, 'token-old-2', now);
    await sessions.create(key.id, 'token-fresh', later(2_000));
    const before = await prisma.consoleSession.count();
    const removed = await sessions.deleteExpired(now);
    expect(removed).toBeGreaterThanOrEqual(2);
    expect(await prisma.consoleSession.count()).toBe(before - removed);
    const left = await prisma.consoleSession.findMany({ where: { tokenHash: { in: ['token-old-1', 'token-old-2', 'token-fresh'] } } });
    expect(left.map((s) => s.tokenHash)).toEqual(['token-fresh']);
    expect(await prisma.consoleSession.count({ where: { expiresAt: { lte: now } } })).toBe(0);
  });
});
