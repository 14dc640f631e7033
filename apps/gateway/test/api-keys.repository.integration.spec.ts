import { Test, TestingModule } from '@nestjs/testing';
import { DbModule, PrismaService } from '@trainyard/db';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase } from '@trainyard/testing';
import { ApiKeysRepository } from '../src/auth/api-keys.repository';

describe('API keys against real Postgres', () => {
  let db: { url: string; drop(): Promise<void> };
  let moduleRef: TestingModule;
  let keys: ApiKeysRepository;
  let prisma: PrismaService;

  beforeAll(async () => {
    db = await createTestDatabase();
    moduleRef = await Test.createTestingModule({ imports: [ProcessHealthModule, DbModule.forRoot(db.url)], providers: [ApiKeysRepository] }).compile();
    keys = moduleRef.get(ApiKeysRepository);
    prisma = moduleRef.get(PrismaService);
  });

  afterAll(async () => {
    await moduleRef?.close();
    await db?.drop();
  });

  it('creates the entity on its first key and reuses it for the next, finding each key by its hash', async () => {
    const first = await keys.create('acme', 'ci', 'hash-acme-1', 'ty_aaaa');
    const second = await keys.create('acme', 'laptop', 'hash-acme-2', 'ty_bbbb');
    expect(second.entityId).toBe(first.entityId);
    expect(first).toMatchObject({ name: 'ci', prefix: 'ty_aaaa', entityName: 'acme', lastUsedAt: null, revokedAt: null });
    expect(await prisma.entity.count({ where: { name: 'acme' } })).toBe(1);

    expect(await keys.findByHash('hash-acme-2')).toEqual(second);
    expect(await keys.findByHash('no-such-hash')).toBeNull();
  });

  it('refuses a second key with the same hash', async () => {
    await keys.create('dup', 'one', 'hash-dup', 'ty_dup1');
    await expect(keys.create('dup', 'two', 'hash-dup', 'ty_dup2')).rejects.toThrow();
    expect((await keys.list('dup')).map((k) => k.name)).toEqual(['one']);
  });

  it("lists one entity's keys oldest first, or every key", async () => {
    await keys.create('listing', 'a', 'hash-list-a', 'ty_la');
    await keys.create('listing', 'b', 'hash-list-b', 'ty_lb');
    await keys.create('other-listing', 'c', 'hash-list-c', 'ty_lc');
    expect((await keys.list('listing')).map((k) => k.name)).toEqual(['a', 'b']);
    const all = (await keys.list()).map((k) => k.name);
    expect(all).toEqual(expect.arrayContaining(['a', 'b', 'c']));
    expect(all.indexOf('a')).toBeLessThan(all.indexOf('c'));
  });

  it('revokes by id or by prefix, once: a revoked key is not revoked again', async () => {
    const byId = await keys.create('revoking', 'by id', 'hash-rev-1', 'ty_rev1');
    await keys.create('revoking', 'by prefix', 'hash-rev-2', 'ty_rev2');

    expect((await keys.revoke(byId.id)).map((k) => k.name)).toEqual(['by id']);
    expect((await keys.revoke('ty_rev2')).map((k) => k.name)).toEqual(['by prefix']);
    expect(await keys.revoke(byId.id)).toEqual([]);
    expect(await keys.revoke('ty_rev2')).toEqual([]);

    const stored = await keys.findByHash('hash-rev-1');
    expect(stored?.revokedAt).toBeInstanceOf(Date);
  });

  it("revokes a key only for its own entity, and keeps the first revocation's time", async () => {
    const mine = await keys.create('owner', 'mine', 'hash-own-1', 'ty_own1');
    const theirs = await keys.create('stranger', 'theirs', 'hash-own-2', 'ty_own2');

    expect(await keys.revokeOwned(mine.entityId, theirs.id)).toBeNull();
    expect((await keys.findByHash('hash-own-2'))?.revokedAt).toBeNull();

    const revoked = await keys.revokeOwned(mine.entityId, mine.id);
    expect(revoked?.revokedAt).toBeInstanceOf(Date);
    const again = await keys.revokeOwned(mine.entityId, mine.id);
    expect(again?.revokedAt).toEqual(revoked?.revokedAt);
  });

  it('records when a key was last used', async () => {
    const key = await keys.create('touching', 'k', 'hash-touch', 'ty_tch');
    const at = new Date('2026-01-02T03:04:05.678Z');
    await keys.touch(key.id, at);
    expect((await keys.findByHash('hash-touch'))?.lastUsedAt).toEqual(at);
  });
});
