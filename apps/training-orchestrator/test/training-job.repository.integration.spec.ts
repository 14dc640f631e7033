import { Test, TestingModule } from '@nestjs/testing';
import type { FineTuningDetails, TrainingJobPayload } from '@trainyard/contracts';
import { DbModule, PrismaService } from '@trainyard/db';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase } from '@trainyard/testing';
import { TrainingJobRepository } from '../src/jobs/training-job.repository';
import { sftPayload } from './in-memory-jobs';


const ENDED = { type: 'training_ended' as const, data: {} };
describe('training jobs against real Postgres', () => {
  let db: { url: string; drop(): Promise<void> };
  let moduleRef: TestingModule;
  let jobs: TrainingJobRepository;
  let entityId: string;
  let modelId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    moduleRef = await Test.createTestingModule({ imports: [ProcessHealthModule, DbModule.forRoot(db.url)], providers: [TrainingJobRepository] }).compile();
    jobs = moduleRef.get(TrainingJobRepository);
    const prisma = moduleRef.get(PrismaService);
    entityId = (await prisma.entity.create({ data: { name: 'acme' } })).id;
    modelId = (await prisma.model.create({ data: { entityId, project: 'p', name: 'm', baseModel: 'b' } })).id;
  });

  afterAll(async () => {
    await moduleRef?.close();
    await db?.drop();
  });

  const create = (payload: TrainingJobPayload = sftPayload({ model_name: 'x', entity_name: 'nul \u0000 inside' })) =>
    jobs.create({ entityId, modelId, type: payload.type, payload, experimentalConfig: null });

  it('stores a payload jsonb could not hold, and reads it back', async () => {
    const job = await create();
    expect((await jobs.find(job.id))?.payload).toEqual(sftPayload({ model_name: 'x', entity_name: 'nul \u0000 inside' }));
  });

  it('lets one claim win; restarts a running job only through the message it was claimed by', async () => {
    const job = await create();
    // Three messages of one job (duplicates) delivered at once: one claim wins.
    const claims = await Promise.all([jobs.claim(job.id, 11), jobs.claim(job.id, 12), jobs.claim(job.id, 13)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    const seq = 11 + claims.indexOf(true);
    // Another message of the running job is a duplicate; the winning message again is a redelivery.
    expect(await jobs.claim(job.id, seq === 11 ? 12 : 11)).toBe(false);
    expect(await jobs.claim(job.id, seq)).toBe(true);
    expect(await jobs.finish(job.id, 'succeeded', { checkpointStep: 1 }, ENDED)).toBe(true);
    // The final event is stored with the end, once.
    expect((await jobs.events(job.id, 10)).map((e) => [e.type, e.dedupeKey])).toEqual([['training_ended', 'final']]);
    expect(await jobs.claim(job.id, seq)).toBe(false);
    expect(await jobs.finish(job.id, 'failed', { errorMessage: 'late' }, { type: 'training_failed', data: { error_message: 'late' } })).toBe(false);
    expect((await jobs.events(job.id, 10)).map((e) => e.type)).toEqual(['training_ended']);
  });

  it('claims a job put back in the queue through its new message, and then only through that one', async () => {
    const job = await create();
    expect(await jobs.claim(job.id, 21)).toBe(true);
    expect(await jobs.requeue(job.id, 1)).toBe(true);
    expect(await jobs.claim(job.id, 22)).toBe(true);
    expect(await jobs.claim(job.id, 21)).toBe(false);
    expect(await jobs.claim(job.id, 22)).toBe(true);
    expect((await jobs.findSummary(job.id))?.attempts).toBe(3);
  });

  it('counts the attempts of a re-run job and keeps its first start', async () => {
    const job = await create();
    expect(job.attempts).toBe(0);
    expect(await jobs.claim(job.id, 1)).toBe(true);
    const first = await jobs.findSummary(job.id);
    expect(first?.attempts).toBe(1);
    expect(first?.trainingStart).toBeInstanceOf(Date);
    expect(await jobs.claim(job.id, 1)).toBe(true);
    expect(await jobs.claim(job.id, 1)).toBe(true);
    const rerun = await jobs.findSummary(job.id);
    expect(rerun?.attempts).toBe(3);
    expect(rerun?.trainingStart).toEqual(first?.trainingStart);
    // A refused claim is no attempt.
    await jobs.requestCancel(job.id);
    expect(await jobs.claim(job.id, 1)).toBe(false);
    expect((await jobs.findSummary(job.id))?.attempts).toBe(3);
  });

  it('keeps each job in line behind its model head', async () => {
    const first = await jobs.head(modelId);
    expect(first?.status).toBe('queued');
    const later = await create();
    expect((await jobs.head(modelId))?.id).not.toBe(later.id);
  });

  it('stores an event once per dedupe key, oldest first', async () => {
    const job = await create();
    expect(await jobs.appendEvent(job.id, 'training_started', { num_sequences: 2 }, 'started')).toBe(true);
    expect(await jobs.appendEvent(job.id, 'training_started', { num_sequences: 2 }, 'started')).toBe(false);
    for (const step of [1, 2, 1, 2]) await jobs.appendEvent(job.id, 'gradient_step', { loss: step }, `step:${step}`);
    await jobs.appendEvent(job.id, 'training_ended', {}, 'final');
    const events = await jobs.events(job.id, 100);
    expect(events.map((e) => e.type)).toEqual(['training_started', 'gradient_step', 'gradient_step', 'training_ended']);
    const after = await jobs.events(job.id, 1, events[1].seq);
    expect(after.map((e) => e.type)).toEqual(['gradient_step', 'training_ended']);
  });

  it("lists an entity's jobs newest first, page by page, never another entity's", async () => {
    const prisma = moduleRef.get(PrismaService);
    const other = (await prisma.entity.create({ data: { name: 'globex' } })).id;
    const otherModel = (await prisma.model.create({ data: { entityId: other, project: 'p', name: 'm', baseModel: 'b' } })).id;
    await jobs.create({ entityId: other, modelId: otherModel, type: 'sft', payload: sftPayload({ model_name: 'x', entity_name: 'globex' }), experimentalConfig: null });
    // Same created_at for several jobs: the id breaks the tie, so pages neither skip nor repeat.
    const sameTime = new Date();
    for (let i = 0; i < 3; i++) {
      const job = await create();
      await prisma.trainingJob.update({ where: { id: job.id }, data: { createdAt: sameTime } });
    }
    const all = await prisma.trainingJob.findMany({ where: { entityId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true } });

    const seen: string[] = [];
    let after: { createdAt: Date; id: string } | undefined;
    for (;;) {
      const rows = await jobs.listForEntity(entityId, { limit: 2, after });
      const page = rows.slice(0, 2);
      seen.push(...page.map((r) => r.id));
      if (rows.length <= 2) break;
      after = { createdAt: page[1].createdAt, id: page[1].id };
    }
    expect(seen).toEqual(all.map((j) => j.id));
    expect(await jobs.listForEntity(entityId, { limit: 100, modelId: otherModel })).toEqual([]);
    expect((await jobs.listForEntity(other, { limit: 100 })).map((r) => r.modelId)).toEqual([otherModel]);
  });

  it('pages events newest first too, strictly after the cursor, and finds the newest of a type', async () => {
    const job = await create();
    await jobs.appendEvent(job.id, 'training_started', { num_sequences: 2 }, 'started');
    for (const step of [1, 2]) await jobs.appendEvent(job.id, 'gradient_step', { loss: step }, `step:${step}`);
    await jobs.appendEvent(job.id, 'training_ended', {}, 'final');
    const newest = await jobs.events(job.id, 2, undefined, 'desc');
    expect(newest.map((e) => e.type)).toEqual(['training_ended', 'gradient_step', 'gradient_step']);
    const older = await jobs.events(job.id, 2, newest[1].seq, 'desc');
    expect(older.map((e) => [e.type, e.dedupeKey])).toEqual([
      ['gradient_step', 'step:1'],
      ['training_started', 'started'],
    ]);
    expect((await jobs.lastEvent(job.id, 'gradient_step'))?.dedupeKey).toBe('step:2');
    const unstarted = await create();
    const progress = await jobs.progress([job.id, unstarted.id]);
    expect([...progress]).toEqual([[job.id, { steps_done: 2, num_steps: 2 }]]);
    expect(await jobs.progress([])).toEqual(new Map());
  });

  it('counts the tokens of a job as it succeeds, from its gradient steps, once or twice alike', async () => {
    const job = await create();
    await jobs.appendEvent(job.id, 'gradient_step', { loss: 1, num_tokens: 30 }, 'step:1');
    await jobs.appendEvent(job.id, 'gradient_step', { loss: 1, num_tokens: 12 }, 'step:2');
    await jobs.recordTrainedTokens(job.id);
    expect((await jobs.findSummary(job.id))?.trainedTokens).toBeNull();
    // With the status, in one transaction: no reader sees it succeeded without its tokens.
    await jobs.finish(job.id, 'succeeded', { checkpointStep: 1 }, ENDED);
    expect((await jobs.findSummary(job.id))?.trainedTokens).toBe(42);
    await jobs.recordTrainedTokens(job.id);
    expect((await jobs.findSummary(job.id))?.trainedTokens).toBe(42);
    const failed = await create();
    await jobs.appendEvent(failed.id, 'gradient_step', { loss: 1, num_tokens: 7 }, 'step:1');
    await jobs.finish(failed.id, 'failed', { errorMessage: 'boom' }, ENDED);
    expect((await jobs.findSummary(failed.id))?.trainedTokens).toBeNull();
  });

  it('lists fine-tuning jobs alone, filtered by every metadata pair, or by having none', async () => {
    const prisma = moduleRef.get(PrismaService);
    const entity = (await prisma.entity.create({ data: { name: 'initech' } })).id;
    const model = (await prisma.model.create({ data: { entityId: entity, project: 'p', name: 'm', baseModel: 'b' } })).id;
    const payload = sftPayload({ model_name: 'x', entity_name: 'initech' });
    const fineTuning = (metadata: Record<string, string> | null): FineTuningDetails => ({
      base_model: 'b',
      training_file: 'file-a',
      validation_file: null,
      suffix: null,
      seed: 1,
      metadata,
      hyperparameters: { n_epochs: 1, batch_size: 1, learning_rate_multiplier: 1 },
      model: { entity: 'initech', project: 'fine-tuning', name: 'm' },
    });
    const add = async (details?: FineTuningDetails) => (await jobs.create({ entityId: entity, modelId: model, type: 'sft', payload, experimentalConfig: null, fineTuning: details })).id;
    await add();
    const support = await add(fineTuning({ team: 'support', env: 'prod' }));
    const sales = await add(fineTuning({ team: 'sales', env: 'prod' }));
    const bare = await add(fineTuning(null));
    const ids = async (filter: Parameters<TrainingJobRepository['listForEntity']>[1]) => (await jobs.listForEntity(entity, filter)).map((r) => r.id).sort();

    expect(await ids({ limit: 100, fineTuning: true })).toEqual([support, sales, bare].sort());
    expect(await ids({ limit: 100, metadata: { env: 'prod' } })).toEqual([support, sales].sort());
    expect(await ids({ limit: 100, metadata: { env: 'prod', team: 'sales' } })).toEqual([sales]);
    expect(await ids({ limit: 100, metadata: { team: 'nobody' } })).toEqual([]);
    expect(await ids({ limit: 100, metadata: null })).toEqual([bare]);
    expect((await jobs.findSummary(support))?.fineTuning).toEqual(fineTuning({ team: 'support', env: 'prod' }));
  });
});
