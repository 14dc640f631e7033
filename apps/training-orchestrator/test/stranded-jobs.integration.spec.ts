import { Test, TestingModule } from '@nestjs/testing';
import { TrainingWorkItem, WorkQueues } from '@trainyard/contracts';
import { DbModule, PrismaService } from '@trainyard/db';
import { MessageBus } from '@trainyard/messaging';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase, startNatsServer, TestNatsServer, waitFor } from '@trainyard/testing';
import { OrchestratorConfig } from '../src/config/orchestrator.config';
import { JobQueue } from '../src/jobs/job-queue';
import { TrainingJobRepository } from '../src/jobs/training-job.repository';
import { sftPayload } from './in-memory-jobs';
import { StrandedJobsWatcher } from '../src/work/stranded-jobs.watcher';

const PREFIX = 'sj';


const ENDED = { type: 'training_ended' as const, data: {} };
describe('heads without a message in the training queue (real Postgres and nats-server)', () => {
  let db: { url: string; drop(): Promise<void> };
  let nats: TestNatsServer;
  let bus: MessageBus;
  let moduleRef: TestingModule;
  let jobs: TrainingJobRepository;
  let watcher: StrandedJobsWatcher;
  let entityId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    nats = await startNatsServer();
    bus = await MessageBus.connect({ servers: nats.url, streamPrefix: PREFIX });
    await bus.ensureWorkQueue(WorkQueues.training);
    moduleRef = await Test.createTestingModule({
      imports: [ProcessHealthModule, DbModule.forRoot(db.url)],
      providers: [
        TrainingJobRepository,
        JobQueue,
        StrandedJobsWatcher,
        { provide: MessageBus, useValue: bus },
        // Scans are called by the test, not by the timer.
        { provide: OrchestratorConfig, useValue: { STRANDED_JOBS_SCAN_MS: 3_600_000 } },
      ],
    }).compile();
    await moduleRef.init();
    jobs = moduleRef.get(TrainingJobRepository);
    watcher = moduleRef.get(StrandedJobsWatcher);
    entityId = (await moduleRef.get(PrismaService).entity.create({ data: { name: 'acme' } })).id;
  });

  afterAll(async () => {
    await moduleRef?.close();
    await bus?.close();
    await nats?.stop();
    await db?.drop();
  });

  /** A model with `count` jobs, oldest first. */
  async function modelWithJobs(name: string, count: number): Promise<string[]> {
    const prisma = moduleRef.get(PrismaService);
    const modelId = (await prisma.model.create({ data: { entityId, project: 'p', name, baseModel: 'b' } })).id;
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const payload = sftPayload({ model_name: `wandb-artifact:///acme/p/${name}` });
      ids.push((await jobs.create({ entityId, modelId, type: 'sft', payload, experimentalConfig: null })).id);
    }
    return ids;
  }

  const queued = async () => (await bus.queuedPayloads<TrainingWorkItem>(WorkQueues.training)).map((item) => item.job_id);

  /** Takes every message off the queue, acknowledging it, as a worker that skipped it would. */
  async function drain(): Promise<void> {
    const reader = await bus.consume(WorkQueues.training);
    for (let message = await reader.next(1_000); message; message = await reader.next(1_000)) message.ack();
  }

  it('puts back a running head whose message was acknowledged, and publishes a queued head that has none', async () => {
    const [running] = await modelWithJobs('running', 1);
    const [queuedHead, behind] = await modelWithJobs('queued', 2);
    expect(await jobs.claim(running, 1)).toBe(true);
    expect(await queued()).toEqual([]);

    expect((await watcher.scan()).sort()).toEqual([running, queuedHead].sort());

    expect((await jobs.find(running))?.status).toBe('queued');
    expect((await jobs.find(running))?.attempts).toBe(1);
    // Only heads: the model's second job waits for the first to end.
    expect((await queued()).sort()).toEqual([running, queuedHead].sort());
    expect(await queued()).not.toContain(behind);
    // With their messages in the queue, a second scan changes nothing.
    expect(await watcher.scan()).toEqual([]);
    await drain();
    for (const id of [running, queuedHead, behind]) await jobs.finish(id, 'succeeded', {}, ENDED);
  }, 30_000);

  it('leaves alone a running head whose message is still held, and one that was claimed again since it was seen', async () => {
    const [held] = await modelWithJobs('held', 1);
    await moduleRef.get(JobQueue).advance((await jobs.findSummary(held))?.modelId ?? '');
    expect(await jobs.claim(held, 5)).toBe(true);
    expect(await watcher.scan()).toEqual([]);
    expect((await jobs.find(held))?.status).toBe('running');
    await drain();

    // Seen at attempts 1; a worker claimed it again (attempts 2) before it could be put back.
    expect(await jobs.claim(held, 5)).toBe(true);
    expect(await jobs.requeue(held, 1)).toBe(false);
    expect((await jobs.find(held))?.status).toBe('running');
    await jobs.finish(held, 'succeeded', {}, ENDED);
  }, 30_000);

  it('reads every message the stream holds, past acknowledged ones', async () => {
    const ids = await modelWithJobs('many', 1);
    for (let i = 0; i < 5; i++) await bus.enqueue(WorkQueues.training, { job_id: `${ids[0]}-${i}` });
    const reader = await bus.consume(WorkQueues.training);
    (await reader.next(1_000))?.ack();
    (await reader.next(1_000))?.nak(60_000);
    // An acknowledgement is not confirmed to the sender: the stream drops the message shortly after.
    const expected = [1, 2, 3, 4].map((i) => `${ids[0]}-${i}`);
    await waitFor(async () => JSON.stringify(await queued()) === JSON.stringify(expected), { what: 'the acknowledged message to leave the stream', timeoutMs: 5_000 });
    await drain();
  }, 30_000);
});
