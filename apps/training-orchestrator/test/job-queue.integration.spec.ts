import { Test, TestingModule } from '@nestjs/testing';
import { ErrorCode, WorkQueues } from '@trainyard/contracts';
import { DbModule, PrismaService } from '@trainyard/db';
import { MessageBus, RECONNECT_FOREVER } from '@trainyard/messaging';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase, startNatsServer, TestNatsServer, waitFor } from '@trainyard/testing';
import { JobQueue, REPUBLISH_INTERVAL_MS } from '../src/jobs/job-queue';
import { TrainingJobRepository } from '../src/jobs/training-job.repository';
import { sftPayload } from './in-memory-jobs';

const PREFIX = 'jq';

describe('the training queue when the message bus is down (real Postgres and nats-server)', () => {
  let db: { url: string; drop(): Promise<void> };
  let nats: TestNatsServer;
  let bus: MessageBus;
  let moduleRef: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    nats = await startNatsServer();
    bus = await MessageBus.connect({ servers: nats.url, ...RECONNECT_FOREVER, streamPrefix: PREFIX });
    await bus.ensureWorkQueue(WorkQueues.training);
    moduleRef = await Test.createTestingModule({
      imports: [ProcessHealthModule, DbModule.forRoot(db.url)],
      providers: [
        TrainingJobRepository,
        JobQueue,
        { provide: MessageBus, useValue: bus },
      ],
    }).compile();
    await moduleRef.init();
  });

  afterAll(async () => {
    await moduleRef?.close();
    await bus?.close();
    await nats?.stop();
    await db?.drop();
  });

  it('publishes a head it could not publish once the bus is back, without being asked again', async () => {
    const prisma = moduleRef.get(PrismaService);
    const entityId = (await prisma.entity.create({ data: { name: 'acme' } })).id;
    const modelId = (await prisma.model.create({ data: { entityId, project: 'p', name: 'm', baseModel: 'b' } })).id;
    await moduleRef.get(TrainingJobRepository).create({ entityId, modelId, type: 'sft', payload: sftPayload(), experimentalConfig: null });

    await nats.kill();
    const failure = await moduleRef.get(JobQueue).advance(modelId).then(
      () => undefined,
      (err: { code?: string }) => err,
    );
    expect(failure?.code).toBe(ErrorCode.Unavailable);

    await nats.start();
    await waitFor(async () => (await bus.queueDepth(WorkQueues.training)) === 1, {
      what: 'the job to be published after the bus came back',
      timeoutMs: REPUBLISH_INTERVAL_MS * 4,
      intervalMs: 250,
    });
  }, 60_000);
});
