import { TestingModule } from '@nestjs/testing';
import { ArtifactStore, putBundle, readBundle } from '@trainyard/artifacts';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { PrismaService } from '@trainyard/db';
import { ADAPTER_WEIGHTS_FILE } from '@trainyard/engine/files';
import { randomUUID } from 'node:crypto';
import { AdapterFiles } from '../src/artifacts/adapter-files';
import { CheckpointRecorderService } from '../src/checkpoints/checkpoint-recorder.service';
import { CheckpointRepository } from '../src/checkpoints/checkpoint.repository';
import { digestOfRef } from '../src/common/artifact-ref';
import { ModelsService } from '../src/models/models.service';
import { BASE, RegistryFixture, startRegistryFixture } from './support/registry-fixture';

describe('recording a training job checkpoint, against real Postgres and a real disk', () => {
  let fixture: RegistryFixture;
  let moduleRef: TestingModule;
  let store: ArtifactStore;
  let recorder: CheckpointRecorderService;
  const scope = { entity_id: '', entity_name: 'acme' };

  beforeAll(async () => {
    fixture = await startRegistryFixture([CheckpointRecorderService]);
    ({ moduleRef, store } = fixture);
    recorder = moduleRef.get(CheckpointRecorderService);
    scope.entity_id = (await moduleRef.get(PrismaService).entity.create({ data: { name: 'acme' } })).id;
  });

  afterAll(() => fixture?.close());

  const createModel = (name: string) =>
    moduleRef.get(ModelsService).create({ ...scope, entity: null, project: 'p', name, base_model: BASE, return_existing: true });

  it('gives a job exactly one checkpoint at the next step, however often and concurrently it is recorded', async () => {
    const prisma = moduleRef.get(PrismaService);
    const model = await createModel('m');
    const step0 = await moduleRef.get(CheckpointRepository).latest(model.id);
    const files = await readBundle(store, digestOfRef(step0?.adapterPath as string) as string);
    const trained = await putBundle(store, [...files].map(([name, data]) => ({ name, data: name === ADAPTER_WEIGHTS_FILE ? Buffer.concat([data, Buffer.from(' ')]) : data })));

    const record = (jobId: string) => recorder.record({ ...scope, model_id: model.id, job_id: jobId, adapter_bundle: trained.sha256, metrics: {} });
    const job = randomUUID();
    const rows = await Promise.all([record(job), record(job), record(job)]);
    expect(new Set(rows.map((r) => r.id))).toEqual(new Set([job]));
    expect(rows.map((r) => r.step)).toEqual([1, 1, 1]);
    expect((await record(job)).step).toBe(1);
    expect((await record(randomUUID())).step).toBe(2);
    expect(await prisma.checkpoint.count({ where: { modelId: model.id } })).toBe(3);
    const weights = trained.files.find((f) => f.name === ADAPTER_WEIGHTS_FILE);
    expect(rows[0].adapter_sha256).toBe(weights?.sha256);
  });

  it('refuses a bundle that is not in the store, or is not an adapter, naming adapter_bundle', async () => {
    const model = await createModel('refused');
    const record = (adapter_bundle: string) => recorder.record({ ...scope, model_id: model.id, job_id: randomUUID(), adapter_bundle, metrics: {} });
    const missing = await record('0'.repeat(64)).catch((e: ServiceError) => e);
    expect(missing).toMatchObject({ code: ErrorCode.InvalidRequest });
    expect((missing as ServiceError).message).toMatch(/adapter_bundle: Artifact 0{64} is not in the artifact store/);
    const notAdapter = await putBundle(store, [{ name: 'notes.txt', data: Buffer.from('hello') }]);
    await expect(record(notAdapter.sha256)).rejects.toThrow(/An adapter is adapter_config.json and adapter_model.safetensors; the bundle holds notes.txt/);
    const plain = await store.put(Buffer.from('not a manifest'));
    await expect(record(plain.sha256)).rejects.toThrow(/is not a bundle manifest/);
    expect(await moduleRef.get(AdapterFiles).checkTrained(notAdapter.sha256).catch((e: Error) => e.message)).toMatch(/the bundle holds/);
  });
});
