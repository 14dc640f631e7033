import { TestingModule } from '@nestjs/testing';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { PrismaService } from '@trainyard/db';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AdapterFiles } from '../src/artifacts/adapter-files';
import { ArtifactSweeper } from '../src/artifacts/artifact-sweeper';
import { LocalArtifactStore } from '../src/artifacts/local-artifact-store';
import { BaseModelsService } from '../src/base-models/base-models.service';
import { CheckpointsService } from '../src/checkpoints/checkpoints.service';
import { ModelsService } from '../src/models/models.service';
import { BASE, RegistryFixture, startRegistryFixture } from './support/registry-fixture';

describe('registry storage against real Postgres and a real disk', () => {
  let fixture: RegistryFixture;
  let moduleRef: TestingModule;
  let root: string;
  let modelsDir: string;
  let store: LocalArtifactStore;
  let models: ModelsService;
  let checkpoints: CheckpointsService;
  let prisma: PrismaService;
  let entityId: string;

  beforeAll(async () => {
    fixture = await startRegistryFixture([ArtifactSweeper, CheckpointsService]);
    ({ moduleRef, root, modelsDir, store } = fixture);
    models = moduleRef.get(ModelsService);
    checkpoints = moduleRef.get(CheckpointsService);
    prisma = moduleRef.get(PrismaService);
    entityId = (await prisma.entity.create({ data: { name: 'acme' } })).id;
  });

  afterAll(() => fixture?.close());

  const create = (name: string, returnExisting = true) =>
    models.create({ entity_id: entityId, entity_name: 'acme', entity: null, project: 'p', name, base_model: BASE, return_existing: returnExisting });

  /** Every checkpoint row must point at a complete adapter. */
  async function danglingCheckpoints(): Promise<string[]> {
    const rows = await prisma.checkpoint.findMany();
    return rows.filter((r) => !existsSync(join(store.localPath(r.adapterPath), 'adapter_model.safetensors'))).map((r) => r.id);
  }

  it('publishes nothing when a write dies half way, and leaves no staging behind', async () => {
    const key = `adapters/${randomUUID()}/${randomUUID()}`;
    const failed = await store
      .putDirectory(key, async (dir) => {
        writeFileSync(join(dir, 'adapter_model.safetensors'), 'half a tensor');
        throw new Error('disk full');
      })
      .catch((e: Error) => e);
    expect((failed as Error).message).toBe('disk full');
    expect(existsSync(store.localPath(key))).toBe(false);
    expect(readdirSync(join(root, '.staging'))).toEqual([]);
  });

  it('sweeps adapters written but never recorded (a crash before the row), and keeps recorded ones', async () => {
    const model = await create('kept');
    const orphanModel = randomUUID();
    const base = await moduleRef.get(BaseModelsService).find(BASE);
    if (!base) throw new Error(`${BASE} is missing from ${modelsDir}`);
    // The crash: files written and renamed into place, then the process dies before the insert.
    const orphan = await moduleRef.get(AdapterFiles).writeInitial(orphanModel, randomUUID(), base);
    expect(existsSync(store.localPath(orphan.adapterPath))).toBe(true);

    const sweeper = moduleRef.get(ArtifactSweeper);
    expect(await sweeper.sweep(new Date(Date.now() - 60_000))).toBe(0); // too young: may be a write in flight
    expect(await sweeper.sweep(new Date(Date.now() + 1_000))).toBe(1);
    expect(existsSync(store.localPath(orphan.adapterPath))).toBe(false);
    expect(readdirSync(join(root, 'adapters', model.id))).toHaveLength(1);
    expect(await danglingCheckpoints()).toEqual([]);
  });

  it('refuses a path that would leave the artifact root', () => {
    expect(() => store.localPath('adapters/../../etc')).toThrow(/Unsafe artifact key/);
    expect(() => store.localPath('/etc/passwd')).toThrow(/Unsafe artifact key/);
  });

  it('gives every concurrent get-or-create the same model, and keeps only the winner\'s adapter', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => create('raced')));
    expect(new Set(results.map((m) => m.id)).size).toBe(1);
    expect(await prisma.checkpoint.count({ where: { modelId: results[0].id } })).toBe(1);
    // The losers wrote adapters too, and removed them when their insert lost.
    expect(readdirSync(join(root, 'adapters', results[0].id))).toHaveLength(1);
    const recorded = new Set((await prisma.model.findMany({ select: { id: true } })).map((m) => m.id));
    const adapters = readdirSync(join(root, 'adapters')).filter((dir) => readdirSync(join(root, 'adapters', dir)).length > 0);
    expect(adapters.filter((dir) => !recorded.has(dir))).toEqual([]);
    expect(await danglingCheckpoints()).toEqual([]);
  });

  it('never lets concurrent deletes empty a model: one wins, the other is refused with 409', async () => {
    const model = await create('two-steps');
    const step0 = await prisma.checkpoint.findFirstOrThrow({ where: { modelId: model.id } });
    await prisma.checkpoint.create({ data: { modelId: model.id, step: 1, adapterPath: step0.adapterPath, adapterSha256: step0.adapterSha256 } });
    const outcomes = await Promise.allSettled([
      checkpoints.delete({ entity_id: entityId, entity_name: 'acme', model_id: model.id, steps: [0] }),
      checkpoints.delete({ entity_id: entityId, entity_name: 'acme', model_id: model.id, steps: [1] }),
    ]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const refused = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect((refused.reason as ServiceError).code).toBe(ErrorCode.Conflict);
    expect(await prisma.checkpoint.count({ where: { modelId: model.id } })).toBe(1);
  });

  it('keeps step numbers growing after deletes: last_step is never lowered', async () => {
    const model = await create('numbering');
    await prisma.model.update({ where: { id: model.id }, data: { lastStep: 5 } });
    await checkpoints.delete({ entity_id: entityId, entity_name: 'acme', model_id: model.id, steps: [5] });
    expect((await prisma.model.findUniqueOrThrow({ where: { id: model.id } })).lastStep).toBe(5);
  });
});
