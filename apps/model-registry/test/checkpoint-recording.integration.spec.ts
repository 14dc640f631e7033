import { TestingModule } from '@nestjs/testing';
import { PrismaService } from '@trainyard/db';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '@trainyard/engine/files';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AdapterFiles } from '../src/artifacts/adapter-files';
import { LocalArtifactStore } from '../src/artifacts/local-artifact-store';
import { CheckpointRepository } from '../src/checkpoints/checkpoint.repository';
import { ModelsService } from '../src/models/models.service';
import { BASE, RegistryFixture, startRegistryFixture } from './support/registry-fixture';

describe('recording a training job checkpoint, against real Postgres and a real disk', () => {
  let fixture: RegistryFixture;
  let moduleRef: TestingModule;
  let store: LocalArtifactStore;

  beforeAll(async () => {
    fixture = await startRegistryFixture();
    ({ moduleRef, store } = fixture);
  });

  afterAll(() => fixture?.close());

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
