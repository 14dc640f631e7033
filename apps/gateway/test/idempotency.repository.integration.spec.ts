import { Test, TestingModule } from '@nestjs/testing';
import { DbModule, PrismaService } from '@trainyard/db';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase } from '@trainyard/testing';
import { IdempotencyRepository, IN_PROGRESS, RequestIdentity } from '../src/idempotency/idempotency.repository';

describe('idempotency keys against real Postgres', () => {
  let db: { url: string; drop(): Promise<void> };
  let moduleRef: TestingModule;
  let records: IdempotencyRepository;
  let prisma: PrismaService;
  let entityId: string;
  let otherEntityId: string;

  const request = (key: string, overrides: Partial<RequestIdentity> = {}): RequestIdentity => ({
    entityId,
    key,
    method: 'POST',
    path: '/v1/preview/training-jobs',
    requestHash: `hash-of-${key}`,
    ...overrides,
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    moduleRef = await Test.createTestingModule({ imports: [ProcessHealthModule, DbModule.forRoot(db.url)], providers: [IdempotencyRepository] }).compile();
    records = moduleRef.get(IdempotencyRepository);
    prisma = moduleRef.get(PrismaService);
    entityId = (await prisma.entity.create({ data: { name: 'acme' } })).id;
    otherEntityId = (await prisma.entity.create({ data: { name: 'globex' } })).id;
  });

  afterAll(async () => {
    await moduleRef?.close();
    await db?.drop();
  });

  it('lets exactly one of several concurrent requests claim a key; the others get its record', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => records.claim(request('concurrent'))));
    const claimed = results.filter((r) => 'claimed' in r);
    expect(claimed).toHaveLength(1);
    const id = 'claimed' in claimed[0] ? claimed[0].claimed.id : '';
    for (const r of results.filter((r) => 'existing' in r)) {
      expect('existing' in r && r.existing).toMatchObject({ id, requestHash: 'hash-of-concurrent', responseStatus: IN_PROGRESS });
    }
  });

  it('returns the stored response once the first request completes', async () => {
    const first = await records.claim(request('completed'));
    if (!('claimed' in first)) throw new Error('expected a claim');
    expect(first.claimed).toMatchObject({ requestHash: 'hash-of-completed', responseStatus: IN_PROGRESS, responseBody: null });
    await records.complete(first.claimed.id, 201, { id: 'job-1', nested: { n: [1, 2] } });

    const again = await records.claim(request('completed', { requestHash: 'a different body' }));
    expect(again).toEqual({
      existing: expect.objectContaining({ id: first.claimed.id, requestHash: 'hash-of-completed', responseStatus: 201, responseBody: { id: 'job-1', nested: { n: [1, 2] } } }),
    });
  });

  it('keeps keys apart per entity', async () => {
    const mine = await records.claim(request('shared-name'));
    const theirs = await records.claim(request('shared-name', { entityId: otherEntityId }));
    expect('claimed' in mine && 'claimed' in theirs).toBe(true);
  });

  it('frees a released key for the next request', async () => {
    const first = await records.claim(request('released'));
    if (!('claimed' in first)) throw new Error('expected a claim');
    await records.release(first.claimed.id);
    await records.release(first.claimed.id);
    const second = await records.claim(request('released'));
    expect('claimed' in second && second.claimed.id).not.toBe(first.claimed.id);
  });

  it('forgets a record only when it is older than the cutoff', async () => {
    const first = await records.claim(request('expiring'));
    if (!('claimed' in first)) throw new Error('expected a claim');
    const created = first.claimed.createdAt;
    expect(await records.forgetIfOlderThan(first.claimed.id, created)).toBe(false);
    expect('existing' in (await records.claim(request('expiring')))).toBe(true);
    expect(await records.forgetIfOlderThan(first.claimed.id, new Date(created.getTime() + 1))).toBe(true);
    expect('claimed' in (await records.claim(request('expiring')))).toBe(true);
  });
});
