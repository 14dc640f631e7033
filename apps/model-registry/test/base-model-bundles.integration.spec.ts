import { TestingModule } from '@nestjs/testing';
import { ArtifactStore, readBundleManifest } from '@trainyard/artifacts';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ArtifactSweeper } from '../src/artifacts/artifact-sweeper';
import { BaseModelBundles } from '../src/base-models/base-model-bundles';
import { BaseModelsService, InstalledBaseModel } from '../src/base-models/base-models.service';
import { PublishedBaseModelRepository } from '../src/base-models/published-base-model.repository';
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

  /** The model's bundle once its publish is done: bundleOf waits 2 s at most, and answers null past that (a loaded machine can take longer). */
  async function published(by: BaseModelBundles = bundles): Promise<string | null> {
    await by.bundleOf(base);
    await by.settled();
    return by.bundleOf(base);
  }

  it('names no bundle while PUBLISH_BASE_MODELS is off', async () => {
    expect(await bundles.bundleOf(base)).toBeNull();
  });

  it('stores the model\'s top-level files as a bundle, once, and again when they change', async () => {
    moduleRef.get(RegistryConfig).PUBLISH_BASE_MODELS = true;
    mkdirSync(join(base.dir, 'onnx'), { recursive: true }); // a subdirectory is left out, not refused
    const first = await published();
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    const names = (await readBundleManifest(store, first as string)).files.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json']));
    expect(names).not.toContain('onnx');
    expect(await bundles.bundleOf(base)).toBe(first);

    appendFileSync(join(base.dir, 'generation_config.json'), ' ');
    const second = await published();
    expect(second).toMatch(/^[0-9a-f]{64}$/);
    expect(second).not.toBe(first);
  });

  it('keeps the published models through the artifact sweep while the catalogue names them, and drops what nothing names', async () => {
    const current = (await bundles.bundleOf(base)) as string;
    const files = (await readBundleManifest(store, current)).files;
    const stale = await store.put(Buffer.from('a file of no model, and of no row'));
    await moduleRef.get(ArtifactSweeper).sweep(new Date(Date.now() + 60_000));
    expect(await store.has(current)).toBe(true);
    for (const file of files) expect([file.name, await store.has(file.sha256)]).toEqual([file.name, true]);
    expect(await store.has(stale.sha256)).toBe(false);
  });

  it('records the model in the catalogue, where a replica without the models volume lists and resolves it', async () => {
    const current = (await bundles.bundleOf(base)) as string;
    const config = Object.assign(new RegistryConfig(), { MODELS_DIR: join(fixture.modelsDir, 'not-mounted'), PUBLISH_BASE_MODELS: false });
    const catalogue = moduleRef.get(PublishedBaseModelRepository);
    const elsewhere = new BaseModelsService(config, catalogue);
    const listed = await elsewhere.list();
    expect(listed.map(({ id, architecture, unsupported, publishedBundle }) => ({ id, architecture, unsupported, publishedBundle }))).toEqual([
      { id: BASE, architecture: base.architecture, unsupported: null, publishedBundle: current },
    ]);
    const found = (await elsewhere.find(BASE)) as InstalledBaseModel;
    expect(found.created).toBe(base.created);
    // Publishing off on that replica: it names the catalogue's bundle, and hashes nothing.
    const bundlesThere = new BaseModelBundles(config, store, elsewhere, catalogue);
    expect(await bundlesThere.bundleOf(found)).toBe(current);
    // Told to publish without a models directory (a volume that did not mount), it leaves the catalogue alone.
    await expect(bundlesThere.publishAll()).rejects.toThrow(/is not a directory: nothing to publish/);
    expect((await catalogue.list()).map((row) => row.id)).toEqual([BASE]);
  });

  it('does not hash unchanged files again after a restart, and publishes again what changed', async () => {
    const current = (await bundles.bundleOf(base)) as string;
    const config = moduleRef.get(RegistryConfig);
    const restarted = () => new BaseModelBundles(config, store, moduleRef.get(BaseModelsService), moduleRef.get(PublishedBaseModelRepository));
    const putFile = jest.spyOn(store, 'putFile');
    try {
      expect(await restarted().bundleOf(base)).toBe(current);
      expect(putFile).not.toHaveBeenCalled();
      appendFileSync(join(base.dir, 'generation_config.json'), ' ');
      const changed = await published(restarted());
      expect(changed).not.toBe(current);
      expect(putFile).toHaveBeenCalled();
      expect((await moduleRef.get(PublishedBaseModelRepository).find(BASE))?.bundle).toBe(changed);
    } finally {
      putFile.mockRestore();
    }
  });

  it('removes from the catalogue, on a full publish, the models gone from the volume', async () => {
    const catalogue = moduleRef.get(PublishedBaseModelRepository);
    const kept = (await bundles.bundleOf(base)) as string;
    const gone = { id: 'acme/removed', architecture: 'llama', bundle: kept, signature: 'x', createdAt: new Date() };
    await catalogue.save(gone, async () => undefined);
    expect(await catalogue.find(gone.id)).not.toBeNull();
    const { published, removed } = await bundles.publishAll();
    expect(published).toEqual([BASE]);
    expect(removed).toEqual([gone.id]);
    expect((await catalogue.list()).map((row) => row.id)).toEqual([BASE]);
  });
});
