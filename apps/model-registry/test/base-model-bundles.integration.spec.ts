import { TestingModule } from '@nestjs/testing';
import { ArtifactStore, readBundleManifest } from '@trainyard/artifacts';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ArtifactSweeper } from '../src/artifacts/artifact-sweeper';
import { BaseModelBundles } from '../src/base-models/base-model-bundles';
import { BaseModelsService, InstalledBaseModel } from '../src/base-models/base-models.service';
import { RegistryConfig } from '../src/config/registry.config';
import { BASE, RegistryFixture, startRegistryFixture } from './support/registry-fixture';

describe('base models published to the artifact store', () => {
  let fixture: RegistryFixture;
  let moduleRef: TestingModule;
  let store: ArtifactStore;
  let bundles: BaseModelBundles;
  let base: InstalledBaseModel;

  beforeAll(async () => {
    fixture = await startRegistryFixture([ArtifactSweeper]);
    ({ moduleRef, store } = fixture);
    bundles = moduleRef.get(BaseModelBundles);
    base = (await moduleRef.get(BaseModelsService).find(BASE)) as InstalledBaseModel;
  });

  afterAll(() => fixture?.close());

  it('names no bundle while PUBLISH_BASE_MODELS is off', async () => {
    expect(await bundles.bundleOf(base)).toBeNull();
  });

  it('stores the model\'s top-level files as a bundle, once, and again when they change', async () => {
    moduleRef.get(RegistryConfig).PUBLISH_BASE_MODELS = true;
    mkdirSync(join(base.dir, 'onnx'), { recursive: true }); // a subdirectory is left out, not refused
    const first = await bundles.bundleOf(base);
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    const names = (await readBundleManifest(store, first as string)).files.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json']));
    expect(names).not.toContain('onnx');
    expect(await bundles.bundleOf(base)).toBe(first);

    appendFileSync(join(base.dir, 'generation_config.json'), ' ');
    const second = await bundles.bundleOf(base);
    expect(second).toMatch(/^[0-9a-f]{64}$/);
    expect(second).not.toBe(first);
  });

  it('keeps the published models through the artifact sweep (no row names them), and drops what no model has any more', async () => {
    const current = (await bundles.bundleOf(base)) as string;
    const files = (await readBundleManifest(store, current)).files;
    const stale = await store.put(Buffer.from('a file of no model, and of no row'));
    await moduleRef.get(ArtifactSweeper).sweep(new Date(Date.now() + 60_000));
    expect(await store.has(current)).toBe(true);
    for (const file of files) expect([file.name, await store.has(file.sha256)]).toEqual([file.name, true]);
    expect(await store.has(stale.sha256)).toBe(false);
  });
});
