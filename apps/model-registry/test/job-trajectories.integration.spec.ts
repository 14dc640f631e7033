import { Controller, INestMicroservice, Module } from '@nestjs/common';
import { MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { Test, TestingModule } from '@nestjs/testing';
import { ARTIFACT_STORE, ArtifactStore, sha256Of } from '@trainyard/artifacts';
import { EndedJobsReply, EndedJobsRequest, ErrorCode, Subjects } from '@trainyard/contracts';
import { PrismaService } from '@trainyard/db';
import { BlobStore } from '@trainyard/messaging';
import { randomUUID } from 'node:crypto';
import { ArtifactSweeper } from '../src/artifacts/artifact-sweeper';
import { CheckpointRepository } from '../src/checkpoints/checkpoint.repository';
import { RegistryConfig } from '../src/config/registry.config';
import { ModelsService } from '../src/models/models.service';
import { TrajectoriesService } from '../src/trajectories/trajectories.service';
import { TrajectoryObjects } from '../src/trajectories/trajectory-objects';
import { TrajectoryRepository } from '../src/trajectories/trajectory.repository';
import { BASE, RegistryFixture, startRegistryFixture } from './support/registry-fixture';

/** RL trajectory groups as ART's client sends them: group keys beside the trajectories, keys of its own in each. */
const GROUPS = [
  {
    trajectories: [
      { reward: 1, messages_and_choices: [{ role: 'user', content: 'hi' }], metrics: { turns: 1 } },
      { reward: 0.25, messages_and_choices: [{ role: 'user', content: 'héllo' }], logs: ['x'] },
    ],
    metadata: { task: 'greet' },
  },
  { trajectories: [{ reward: 0, messages_and_choices: [] }], exceptions: [] },
];

/** The jobs the orchestrator stand-in says have ended; it answers only once started. */
const endedJobs = new Set<string>();

@Controller()
class OrchestratorStandIn {
  @MessagePattern(Subjects.training.endedJobs.name)
  ended(@Payload() request: EndedJobsRequest): EndedJobsReply {
    return { job_ids: request.job_ids.filter((id) => endedJobs.has(id)) };
  }
}

@Module({ controllers: [OrchestratorStandIn] })
class OrchestratorStandInModule {}

describe("an RL job's trajectory groups, stored once (real Postgres, nats-server and disk store)", () => {
  let fixture: RegistryFixture;
  let moduleRef: TestingModule;
  let store: ArtifactStore;
  let prisma: PrismaService;
  let blobs: BlobStore;
  let sweeper: ArtifactSweeper;
  let trajectories: TrajectoriesService;
  let orchestrator: INestMicroservice | undefined;
  const scope = { entity_id: '', entity_name: 'acme' };

  beforeAll(async () => {
    fixture = await startRegistryFixture([ArtifactSweeper, TrajectoryRepository, TrajectoryObjects]);
    ({ moduleRef, store } = fixture);
    prisma = moduleRef.get(PrismaService);
    blobs = moduleRef.get(BlobStore);
    sweeper = moduleRef.get(ArtifactSweeper);
    // Five trajectories kept per model: a job's three, and a log of three pushes them out.
    const config = Object.assign(new RegistryConfig(), { TRAJECTORY_RETENTION_COUNT: 5 });
    trajectories = new TrajectoriesService(
      moduleRef.get(ModelsService),
      moduleRef.get(CheckpointRepository),
      moduleRef.get(TrajectoryRepository),
      moduleRef.get(TrajectoryObjects),
      blobs,
      moduleRef.get<ArtifactStore>(ARTIFACT_STORE),
      config,
    );
    scope.entity_id = (await prisma.entity.create({ data: { name: 'acme' } })).id;
  });

  afterAll(async () => {
    await orchestrator?.close();
    await fixture?.close();
  });

  const createModel = (name: string) => moduleRef.get(ModelsService).create({ ...scope, entity: null, project: 'p', name, base_model: BASE, return_existing: true });

  /** What the orchestrator does for a new RL job: the groups stored for it, then kept as trajectories. */
  async function createJob(modelId: string, groups: unknown = GROUPS, jobId = randomUUID()) {
    const stored = await trajectories.storeJobGroups({ ...scope, model_id: modelId, job_id: jobId, trajectory_groups: await blobs.putJson(groups) });
    const kept = await trajectories.record({ ...scope, model_id: modelId, job_id: jobId, split: 'train', as_of: new Date().toISOString() });
    return { jobId, stored, kept };
  }

  async function objects(): Promise<Set<string>> {
    const all = new Set<string>();
    for await (const object of store.list()) all.add(object.sha256);
    return all;
  }

  const sweepNow = () => sweeper.sweep(new Date(Date.now() + 1_000));

  it('stores the groups as one object held for the job, takes the blob, and keeps trajectories that name it without copying it', async () => {
    const model = await createModel('stored-once');
    const before = await objects();
    const bytes = Buffer.from(JSON.stringify(GROUPS));
    const parked = await blobs.putJson(GROUPS);
    const jobId = randomUUID();
    const stored = await trajectories.storeJobGroups({ ...scope, model_id: model.id, job_id: jobId, trajectory_groups: parked });
    expect(stored).toEqual({ sha256: sha256Of(bytes), bytes: bytes.byteLength });
    // The gateway's blob was handed over once: it is gone from the blob store.
    await expect(blobs.read(parked)).rejects.toThrow(/expired before it was read/);
    // A repeated request stores nothing twice.
    expect(await trajectories.storeJobGroups({ ...scope, model_id: model.id, job_id: jobId, trajectory_groups: await blobs.putJson(GROUPS) })).toEqual(stored);
    expect([...(await objects())].filter((sha) => !before.has(sha))).toEqual([stored.sha256]);
    expect(await prisma.jobTrajectoryGroups.findMany({ where: { modelId: model.id } })).toEqual([expect.objectContaining({ jobId, sha256: stored.sha256, bytes: stored.bytes })]);

    expect(await trajectories.record({ ...scope, model_id: model.id, job_id: jobId, split: 'train', as_of: new Date().toISOString() })).toEqual({ step: 0, stored: 3 });
    const rows = await prisma.trajectory.findMany({ where: { modelId: model.id }, orderBy: { seq: 'asc' } });
    expect(rows.map((r) => [r.objectSha256, r.data, r.groupData, r.groupIndex, r.trajectoryIndex, r.reward])).toEqual([
      [stored.sha256, null, null, 0, 0, 1],
      [stored.sha256, null, null, 0, 1, 0.25],
      [stored.sha256, null, null, 1, 0, 0],
    ]);
    expect(rows.map((r) => r.bytes)).toEqual([GROUPS[0].trajectories[0], GROUPS[0].trajectories[1], GROUPS[1].trajectories[0]].map((t) => Buffer.byteLength(JSON.stringify(t))));
  });

  it('lists kept job trajectories exactly as sent, beside logged ones and rows kept before with their JSON inline', async () => {
    const model = await createModel('listed');
    const { jobId } = await createJob(model.id);
    const checkpoint = await moduleRef.get(CheckpointRepository).latest(model.id);
    await trajectories.keepLogged({ id: checkpoint?.id as string, modelId: model.id, step: 0 }, 'val', [{ trajectories: [{ reward: 0.5, note: 'logged' }], metadata: { m: 1 } }], {});
    // A job's trajectory as kept before this change: its JSON in the row (packed as the old code packed it).
    const oldJob = randomUUID();
    await prisma.trajectory.create({
      data: { modelId: model.id, step: 0, split: 'train', jobId: oldJob, batchId: oldJob, groupIndex: 0, trajectoryIndex: 0, reward: 2, bytes: 12, data: { reward: 2, old: true }, groupData: { metadata: 'old' } },
    });
    const page = await trajectories.list({ ...scope, model_id: model.id, limit: 10, order: 'asc' });
    expect(page.data.map((t) => [t.job_id, t.split, t.group_index, t.index, t.trajectory, t.group])).toEqual([
      [jobId, 'train', 0, 0, GROUPS[0].trajectories[0], { metadata: { task: 'greet' } }],
      [jobId, 'train', 0, 1, GROUPS[0].trajectories[1], { metadata: { task: 'greet' } }],
      [jobId, 'train', 1, 0, GROUPS[1].trajectories[0], { exceptions: [] }],
      [null, 'val', 0, 0, { reward: 0.5, note: 'logged' }, { metadata: { m: 1 } }],
      [oldJob, 'train', 0, 0, { reward: 2, old: true }, { metadata: 'old' }],
    ]);
    const filtered = await trajectories.list({ ...scope, model_id: model.id, limit: 1, order: 'desc', job_id: jobId, min_reward: 0.1 });
    expect(filtered.data.map((t) => t.trajectory)).toEqual([GROUPS[0].trajectories[1]]);
    expect(filtered.has_more).toBe(true);
  });

  it('refuses to keep trajectories for a job whose groups were never stored', async () => {
    const model = await createModel('unstored');
    await expect(trajectories.record({ ...scope, model_id: model.id, job_id: randomUUID(), split: 'train', as_of: new Date().toISOString() })).rejects.toMatchObject({ code: ErrorCode.NotFound });
  });

  it("keeps a job's groups while the job may run and while kept trajectories name them, and sweeps them once neither does", async () => {
    const model = await createModel('swept');
    // Groups of their own: identical groups of other tests' jobs would be the same object.
    const { jobId, stored } = await createJob(model.id, [{ ...GROUPS[0], metadata: { task: 'swept' } }, GROUPS[1]]);
    // A job whose groups were stored but never kept as trajectories (its orchestrator stopped before).
    const unkept = await trajectories.storeJobGroups({ ...scope, model_id: model.id, job_id: randomUUID(), trajectory_groups: await blobs.putJson([{ trajectories: [{ reward: 3 }] }]) });
    const held = async () => (await prisma.jobTrajectoryGroups.findMany({ where: { modelId: model.id } })).map((h) => h.sha256).sort();

    // The orchestrator does not answer: no hold is dropped, nothing of either job is swept.
    await sweepNow();
    expect(await held()).toEqual([stored.sha256, unkept.sha256].sort());
    expect(await store.has(unkept.sha256)).toBe(true);

    const module = await Test.createTestingModule({ imports: [OrchestratorStandInModule] }).compile();
    orchestrator = module.createNestMicroservice({ transport: Transport.NATS, options: { servers: [fixture.nats.url] } });
    await orchestrator.listen();

    // Both jobs still queued or running: kept.
    await sweepNow();
    expect(await held()).toEqual([stored.sha256, unkept.sha256].sort());

    // Both ended: their holds go; the kept trajectories still name the first job's groups, nothing names the other's.
    endedJobs.add(jobId);
    for (const hold of await prisma.jobTrajectoryGroups.findMany({ where: { modelId: model.id } })) endedJobs.add(hold.jobId);
    await sweepNow();
    expect(await held()).toEqual([]);
    expect(await store.has(stored.sha256)).toBe(true);
    expect(await store.has(unkept.sha256)).toBe(false);
    expect((await trajectories.list({ ...scope, model_id: model.id, limit: 10, order: 'asc' })).data).toHaveLength(3);

    // A log of three pushes the job's trajectories out (five kept per model): its groups go at the next sweep.
    const checkpoint = await moduleRef.get(CheckpointRepository).latest(model.id);
    await trajectories.keepLogged({ id: checkpoint?.id as string, modelId: model.id, step: 0 }, 'val', [{ trajectories: [1, 2, 3].map((reward) => ({ reward })) }], {});
    expect(await prisma.trajectory.count({ where: { modelId: model.id, objectSha256: stored.sha256 } })).toBe(2);
    await sweepNow();
    expect(await store.has(stored.sha256)).toBe(true);
    await trajectories.keepLogged({ id: checkpoint?.id as string, modelId: model.id, step: 0 }, 'val', [{ trajectories: [4, 5].map((reward) => ({ reward })) }], {});
    expect(await prisma.trajectory.count({ where: { modelId: model.id, objectSha256: stored.sha256 } })).toBe(0);
    await sweepNow();
    expect(await store.has(stored.sha256)).toBe(false);
  });
});
