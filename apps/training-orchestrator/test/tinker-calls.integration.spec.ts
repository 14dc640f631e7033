import { Test, TestingModule } from '@nestjs/testing';
import type { BlobRef, ClaimTinkerCallReply, TinkerCall, TinkerResult } from '@trainyard/contracts';
import { DbModule, PrismaService } from '@trainyard/db';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase } from '@trainyard/testing';
import { randomUUID } from 'node:crypto';
import { CLIENT_HOLD_MS, TinkerCallsService } from '../src/tinker/tinker-calls.service';
import { TinkerRepository } from '../src/tinker/tinker.repository';
import { FakeBlobs } from './in-memory-jobs';

const LORA = { rank: 8, seed: null, train_attn: true, train_mlp: true, train_unembed: true };
const STEP: TinkerCall = { kind: 'optim_step', adam_params: { learning_rate: 1e-3, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 0 } };

describe('Tinker calls against real Postgres: seq_id order and the worker that holds a client', () => {
  let db: { url: string; drop(): Promise<void> };
  let moduleRef: TestingModule;
  let prisma: PrismaService;
  let repo: TinkerRepository;
  let blobs: FakeBlobs;
  let calls: TinkerCallsService;
  let entityId: string;
  let modelId: string;
  let sessionId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    moduleRef = await Test.createTestingModule({ imports: [ProcessHealthModule, DbModule.forRoot(db.url)], providers: [TinkerRepository] }).compile();
    repo = moduleRef.get(TinkerRepository);
    prisma = moduleRef.get(PrismaService);
    blobs = new FakeBlobs();
    calls = new TinkerCallsService(repo, blobs.blobs);
    entityId = (await prisma.entity.create({ data: { name: 'acme' } })).id;
    modelId = (await prisma.model.create({ data: { entityId, project: 'tinker', name: 'm', baseModel: 'b' } })).id;
    sessionId = randomUUID();
    await repo.createSession({ id: sessionId, entityId, tags: [], userMetadata: {}, sdkVersion: '0.25.0' });
  });

  afterAll(async () => {
    await moduleRef?.close();
    await db?.drop();
  });

  let clients = 0;
  async function newClient(): Promise<string> {
    const id = `${sessionId}:train:${clients++}`;
    await repo.createClient({ id, sessionId, entityId, modelId, baseModel: 'b', loraConfig: LORA }, randomUUID());
    return id;
  }
  const submit = async (clientId: string, seqId: number) =>
    (await repo.createCall({ id: randomUUID(), entityId, clientId, kind: 'optim_step', seqId, request: STEP })).id;
  const claim = (requestId: string, worker = 'w1') => calls.claim({ request_id: requestId, worker });
  const succeed = (requestId: string, worker = 'w1') =>
    calls.complete({ request_id: requestId, worker, outcome: 'succeeded', result: `r-${requestId}` as unknown as BlobRef<TinkerResult> });
  const action = (reply: ClaimTinkerCallReply) => reply.action;

  it('runs calls in seq_id order whatever order they arrive in', async () => {
    const client = await newClient();
    const third = await submit(client, 3);
    const second = await submit(client, 2);
    const first = await submit(client, 1);
    blobs.stored.set(`r-${first}`, { metrics: {} });
    blobs.stored.set(`r-${second}`, { metrics: {} });
    blobs.stored.set(`r-${third}`, { metrics: {} });

    expect(action(await claim(third))).toBe('wait');
    expect(action(await claim(second))).toBe('wait');
    const run = await claim(first);
    expect(run).toMatchObject({ action: 'run', call: { seq_id: 1, applied_seq: 0, client_id: client } });
    // While the first runs, the second still waits for it.
    expect(action(await claim(second))).toBe('wait');
    await succeed(first);
    expect(await claim(second)).toMatchObject({ action: 'run', call: { seq_id: 2, applied_seq: 1 } });
    await succeed(second);
    expect(action(await claim(third))).toBe('run');
    await succeed(third);
    // A redelivered message of a done call is dropped.
    expect(await claim(first)).toEqual({ action: 'skip', reason: 'already succeeded' });
  });

  it('answers a repeated submit of one seq_id with the first future', async () => {
    const client = await newClient();
    const id = await submit(client, 1);
    expect(await submit(client, 1)).toBe(id);
  });

  it("keeps a client on the worker that holds it, and fails every later call once that worker's state is gone", async () => {
    const client = await newClient();
    const first = await submit(client, 1);
    blobs.stored.set(`r-${first}`, { metrics: {} });
    expect(action(await claim(first, 'w1'))).toBe('run');
    await succeed(first, 'w1');

    const second = await submit(client, 2);
    // w1 holds it: another worker waits.
    expect(await claim(second, 'w2')).toMatchObject({ action: 'wait', reason: expect.stringContaining('held by worker w1') });
    // w1 has not been heard from for longer than the hold: its state is taken for lost, never silently replaced.
    await prisma.tinkerTrainingClient.update({ where: { id: client }, data: { workerSeenAt: new Date(Date.now() - CLIENT_HOLD_MS - 1_000) } });
    expect(action(await claim(second, 'w2'))).toBe('skip');
    const failed = await repo.findFuture(entityId, second);
    expect(failed).toMatchObject({ status: 'failed', errorCategory: 'Server' });
    expect(failed?.error).toContain('lost its state');

    const third = await submit(client, 3);
    expect(action(await claim(third, 'w1'))).toBe('skip');
    expect(await repo.findFuture(entityId, third)).toMatchObject({ status: 'failed' });
  });

  it('lets the first worker take a client no call has touched, and records a worker that reports its state lost', async () => {
    const client = await newClient();
    const first = await submit(client, 1);
    expect(action(await claim(first, 'w2'))).toBe('run');
    await calls.complete({ request_id: first, worker: 'w2', outcome: 'failed', error: 'gone', category: 'Server', state_lost: true });
    const second = await submit(client, 2);
    expect(action(await claim(second, 'w2'))).toBe('skip');
    expect(await repo.findFuture(entityId, second)).toMatchObject({ status: 'failed', error: 'gone' });
  });
});
