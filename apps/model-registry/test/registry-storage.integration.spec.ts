import { TestingModule } from '@nestjs/testing';
import { ArtifactStore, readBundleManifest } from '@trainyard/artifacts';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { lockReferencesExclusive, PrismaService } from '@trainyard/db';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AdapterFiles } from '../src/artifacts/adapter-files';
import { ArtifactSweeper } from '../src/artifacts/artifact-sweeper';
import { LegacyArtifactDirs } from '../src/artifacts/legacy-artifact-dirs';
import { BaseModelsService } from '../src/base-models/base-models.service';
import { CheckpointRecorderService } from '../src/checkpoints/checkpoint-recorder.service';
import { CheckpointRepository } from '../src/checkpoints/checkpoint.repository';
import { CheckpointsService } from '../src/checkpoints/checkpoints.service';
import { digestOfRef } from '../src/common/artifact-ref';
import { ModelsService } from '../src/models/models.service';
import { BASE, RegistryFixture, startRegistryFixture, StoreKind } from './support/registry-fixture';

describe.each<StoreKind>(['disk', 's3'])('registry storage against real Postgres and the %s artifact store', (kind) => {
  let fixture: RegistryFixture;
  let moduleRef: TestingModule;
  let modelsDir: string;
  let store: ArtifactStore;
  let legacy: LegacyArtifactDirs;
  let models: ModelsService;
  let checkpoints: CheckpointsService;
  let prisma: PrismaService;
  let entityId: string;

  beforeAll(async () => {
    fixture = await startRegistryFixture([ArtifactSweeper, CheckpointsService, CheckpointRecorderService], kind);
    ({ moduleRef, modelsDir, store, legacy } = fixture);
    models = moduleRef.get(ModelsService);
    checkpoints = moduleRef.get(CheckpointsService);
    prisma = moduleRef.get(PrismaService);
    entityId = (await prisma.entity.create({ data: { name: 'acme' } })).id;
  });

  afterAll(() => fixture?.close());

  const create = (name: string, returnExisting = true) =>
    models.create({ entity_id: entityId, entity_name: 'acme', entity: null, project: 'p', name, base_model: BASE, return_existing: returnExisting });

  /** Every checkpoint row must name a complete adapter: its manifest and every file it lists. */
  async function danglingCheckpoints(): Promise<string[]> {
    const dangling: string[] = [];
    for (const row of await prisma.checkpoint.findMany()) {
      const digest = digestOfRef(row.adapterPath);
      const complete = digest !== null && (await readBundleManifest(store, digest).then(async (m) => (await Promise.all(m.files.map((f) => store.has(f.sha256)))).every(Boolean), () => false));
      if (!complete) dangling.push(row.id);
    }
    return dangling;
  }

  async function stored(): Promise<Set<string>> {
    const all = new Set<string>();
    for await (const object of store.list()) all.add(object.sha256);
    return all;
  }

  it('sweeps adapters stored but never recorded (a crash before the row), and keeps recorded ones', async () => {
    await create('kept');
    const base = await moduleRef.get(BaseModelsService).find(BASE);
    if (!base) throw new Error(`${BASE} is missing from ${modelsDir}`);
    // The crash: the adapter stored, then the process dies before the insert.
    const orphan = await moduleRef.get(AdapterFiles).writeInitial(randomUUID(), base);
    const orphanBundle = digestOfRef(orphan.adapterPath) as string;
    expect(await store.has(orphanBundle)).toBe(true);

    const sweeper = moduleRef.get(ArtifactSweeper);
    expect(await sweeper.sweep(new Date(Date.now() - 60_000))).toBe(0); // too young: may be a write in flight
    // Its manifest and weights go; its adapter_config.json is the same bytes as the kept model's, and stays.
    expect(await sweeper.sweep(new Date(Date.now() + 1_000))).toBe(2);
    expect(await store.has(orphanBundle)).toBe(false);
    expect(await store.has(orphan.adapterSha256)).toBe(false);
    expect(await danglingCheckpoints()).toEqual([]);
  });

  it('never lets a checkpoint come to name an adapter the sweep is deleting: the record waits for the sweep, then refuses', async () => {
    const model = await create('recorded-during-sweep');
    const base = await moduleRef.get(BaseModelsService).find(BASE);
    if (!base) throw new Error(`${BASE} is missing from ${modelsDir}`);
    const orphan = await moduleRef.get(AdapterFiles).writeInitial(randomUUID(), base);
    const bundle = digestOfRef(orphan.adapterPath) as string;
    const jobId = randomUUID();
    let recording: Promise<unknown> = Promise.resolve();
    // What the sweep does under its exclusive hold, with a checkpoint recorded meanwhile.
    await prisma.$transaction(async (tx) => {
      await lockReferencesExclusive(tx);
      recording = moduleRef
        .get(CheckpointRecorderService)
        .record({ entity_id: entityId, entity_name: 'acme', model_id: model.id, job_id: jobId, adapter_bundle: bundle, metrics: {} })
        .catch((err: Error) => err);
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const file of (await readBundleManifest(store, bundle)).files) if (file.name !== 'adapter_config.json') await store.delete(file.sha256);
      await store.delete(bundle);
    });
    // Refused: unavailable when it waited on the lock, invalid when it came after the deletes.
    expect(await recording).toMatchObject({ code: expect.stringMatching(/^(unavailable|invalid_request)$/) });
    expect(await prisma.checkpoint.count({ where: { id: jobId } })).toBe(0);
    expect(await danglingCheckpoints()).toEqual([]);
  });

  it('sweeps the objects of deleted checkpoints once no row names them', async () => {
    const model = await create('deleted');
    const before = await stored();
    await models.delete(entityId, model.id);
    await moduleRef.get(ArtifactSweeper).sweep(new Date(Date.now() + 1_000));
    const after = await stored();
    expect(after.size).toBeLessThan(before.size);
    expect([...after].filter((sha) => !before.has(sha))).toEqual([]);
    expect(await danglingCheckpoints()).toEqual([]);
  });

  it("deletes an object at once when no row names it any more (a deleted file's bytes), and keeps one a row still names", async () => {
    const sweeper = moduleRef.get(ArtifactSweeper);
    const lone = await store.put(Buffer.from(`deleted upload ${randomUUID()}`));
    const named = await store.put(Buffer.from(`kept upload ${randomUUID()}`));
    const file = { entityId, filename: 'kept.jsonl', purpose: 'fine-tune', bytes: named.bytes, sha256: named.sha256, storagePath: `sha256:${named.sha256}` };
    await prisma.file.create({ data: { id: `file-${randomUUID().replaceAll('-', '').slice(0, 24)}`, ...file } });
    expect(await sweeper.deleteIfUnreferenced(lone.sha256)).toBe(true);
    expect(await store.has(lone.sha256)).toBe(false);
    expect(await sweeper.deleteIfUnreferenced(named.sha256)).toBe(false);
    expect(await store.has(named.sha256)).toBe(true);
  });

  it("keeps a Tinker saved state's object while its row names it, and sweeps it once the row is gone", async () => {
    const state = await store.put(Buffer.from(`tinker state ${randomUUID()}`));
    const row = await prisma.tinkerSavedState.create({
      data: { id: randomUUID(), entityId, path: `tinker://c-${randomUUID()}/weights/s`, clientId: 'c', baseModel: BASE, loraConfig: { rank: 4 }, sha256: state.sha256, bytes: state.bytes },
    });
    const sweeper = moduleRef.get(ArtifactSweeper);
    await sweeper.sweep(new Date(Date.now() + 1_000));
    expect(await store.has(state.sha256)).toBe(true);
    await prisma.tinkerSavedState.delete({ where: { id: row.id } });
    await sweeper.sweep(new Date(Date.now() + 1_000));
    expect(await store.has(state.sha256)).toBe(false);
  });

  it('moves a legacy adapter directory into the store when first resolved, and records its bundle', async () => {
    const model = await create('legacy');
    const step0 = await prisma.checkpoint.findFirstOrThrow({ where: { modelId: model.id } });
    const adapterPath = `adapters/${model.id}/${randomUUID()}`;
    const dir = legacy.localPath(adapterPath);
    mkdirSync(dir, { recursive: true });
    const manifest = await readBundleManifest(store, digestOfRef(step0.adapterPath) as string);
    // A directory as releases before the content-addressed store wrote them.
    for (const f of manifest.files) writeFileSync(join(dir, f.name), await store.get(f.sha256));
    const row = await prisma.checkpoint.create({ data: { modelId: model.id, step: 1, adapterPath, adapterSha256: step0.adapterSha256 } });

    const repo = moduleRef.get(CheckpointRepository);
    const adapters = moduleRef.get(AdapterFiles);
    const bundle = await adapters.bundleOf(row.adapterPath, (adapter) => repo.setAdapter(row.id, row.adapterPath, adapter, () => adapters.assertStored(adapter)));
    expect(bundle).toBe(digestOfRef(step0.adapterPath));
    expect((await prisma.checkpoint.findUniqueOrThrow({ where: { id: row.id } })).adapterPath).toBe(`sha256:${bundle}`);
    // The directory is now litter: the sweep removes it.
    await moduleRef.get(ArtifactSweeper).sweep(new Date(Date.now() + 1_000));
    expect(existsSync(dir)).toBe(false);
    expect(await danglingCheckpoints()).toEqual([]);
  });

  it('refuses a legacy path that would leave the artifact root', () => {
    expect(() => legacy.localPath('adapters/../../etc')).toThrow(/Unsafe artifact key/);
    expect(() => legacy.localPath('/etc/passwd')).toThrow(/Unsafe artifact key/);
  });

  it('gives every concurrent get-or-create the same model with one complete checkpoint', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => create('raced')));
    expect(new Set(results.map((m) => m.id)).size).toBe(1);
    expect(await prisma.checkpoint.count({ where: { modelId: results[0].id } })).toBe(1);
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
