import { Test, TestingModule } from '@nestjs/testing';
import { DbModule, PrismaService } from '@trainyard/db';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, makeModel } from '@trainyard/engine';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase } from '@trainyard/testing';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdapterFiles } from '../src/artifacts/adapter-files';
import { ARTIFACT_STORE } from '../src/artifacts/artifact-store';
import { LocalArtifactStore } from '../src/artifacts/local-artifact-store';
import { BaseModelsService } from '../src/base-models/base-models.service';
import { CheckpointRepository } from '../src/checkpoints/checkpoint.repository';
import { RegistryConfig } from '../src/config/registry.config';
import { ModelRepository } from '../src/models/model.repository';
import { ModelsService } from '../src/models/models.service';

const BASE = 'trainyard/tiny-chat';

describe('recording a training job checkpoint, against real Postgres and a real disk', () => {
  let db: { url: string; drop(): Promise<void> };
  let moduleRef: TestingModule;
  let root: string;
  let modelsDir: string;
  let store: LocalArtifactStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    root = mkdtempSync(join(tmpdir(), 'registry-artifacts-'));
    modelsDir = mkdtempSync(join(tmpdir(), 'registry-models-'));
    makeModel({ preset: 'tiny', out: join(modelsDir, BASE), seed: 0 });
    store = new LocalArtifactStore(root);
    const config = Object.assign(new RegistryConfig(), { DATABASE_URL: db.url, MODELS_DIR: modelsDir, ARTIFACT_ROOT: root });
    moduleRef = await Test.createTestingModule({
      imports: [ProcessHealthModule, DbModule.forRoot(db.url)],
      providers: [
        { provide: RegistryConfig, useValue: config },
        { provide: ARTIFACT_STORE, useValue: store },
        BaseModelsService,
        AdapterFiles,
        ModelRepository,
        ModelsService,
        CheckpointRepository,
      ],
    }).compile();
  });

  afterAll(async () => {
    await moduleRef?.close();
    await db?.drop();
    rmSync(root, { recursive: true, force: true });
    rmSync(modelsDir, { recursive: true, force: true });
  });

  it('gives a job exactly one checkpoint at the next step, however often and concurrently it is recorded', async () => {
    const prisma = moduleRef.get(PrismaService);
    const entityId = (await prisma.entity.create({ data: { name: 'acme' } })).id;
    const model = await moduleRef
      .get(ModelsService)
      .create({ entity_id: entityId, entity_name: 'acme', entity: null, project: 'p', name: 'm', base_model: BASE, return_existing: true });
    const step0 = await moduleRef.get(CheckpointRepository).latest(model.id);
    const dir = store.localPath(step0?.adapterPath as string);
    const files = [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE].map((name) => ({ name, data: readFileSync(join(dir, name)) }));

    const adapters = moduleRef.get(AdapterFiles);
    const checkpoints = moduleRef.get(CheckpointRepository);
    const record = async (jobId: string) => {
      const stored = await adapters.writeTrained(model.id, jobId, files).catch(() => ({ adapterPath: `adapters/${model.id}/${jobId}`, adapterSha256: 'x' }));
      return checkpoints.createNext(model.id, jobId, stored, {});
    };

    const job = randomUUID();
    const rows = await Promise.all([record(job), record(job), record(job)]);
    expect(new Set(rows.map((r) => r.id))).toEqual(new Set([job]));
    expect(rows.map((r) => r.step)).toEqual([1, 1, 1]);
    expect((await record(job)).step).toBe(1);
    expect((await record(randomUUID())).step).toBe(2);
    expect(await prisma.checkpoint.count({ where: { modelId: model.id } })).toBe(3);
  });
});
