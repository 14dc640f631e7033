import { mkdtemp, readFile, rm, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ArtifactCache,
  ArtifactCorruptError,
  ArtifactNotFoundError,
  ArtifactStore,
  InvalidBundleError,
  putBundle,
  putBundleFromDir,
  readBundle,
  readBundleManifest,
  sha256Of,
} from '../src';

export interface StoreUnderTest {
  store: ArtifactStore;
  /** Replaces the stored bytes of an object behind the store's back, as disk rot or tampering would. */
  corrupt(sha256: string, data: Uint8Array): Promise<void>;
  stop(): Promise<void>;
}

/** The behaviour every ArtifactStore implementation owes its callers, run against each. */
export function describeArtifactStoreContract(name: string, start: () => Promise<StoreUnderTest>): void {
  describe(`${name}: the ArtifactStore contract`, () => {
    let subject: StoreUnderTest;
    let store: ArtifactStore;
    let work: string;

    beforeAll(async () => {
      subject = await start();
      store = subject.store;
    });
    afterAll(() => subject?.stop());
    beforeEach(async () => {
      work = await mkdtemp(join(tmpdir(), 'trainyard-artifacts-test-'));
    });
    afterEach(() => rm(work, { recursive: true, force: true }));

    const unique = (label: string) => Buffer.from(`${label} ${Math.random()} ${Date.now()}`);

    it('stores bytes under their SHA-256 and reads them back', async () => {
      const data = unique('hello');
      const stored = await store.put(data);
      expect(stored).toEqual({ sha256: sha256Of(data), bytes: data.byteLength });
      expect(await store.has(stored.sha256)).toBe(true);
      expect(Buffer.compare(await store.get(stored.sha256), data)).toBe(0);
    });

    it('is idempotent: the same bytes put twice are one object', async () => {
      const data = unique('twice');
      const first = await store.put(data);
      const second = await store.put(Buffer.from(data));
      expect(second).toEqual(first);
      const listed = [];
      for await (const info of store.list()) if (info.sha256 === first.sha256) listed.push(info);
      expect(listed).toHaveLength(1);
      expect(listed[0].bytes).toBe(data.byteLength);
    });

    it('stores an empty object', async () => {
      const stored = await store.put(new Uint8Array(0));
      expect(stored.bytes).toBe(0);
      expect((await store.get(stored.sha256)).byteLength).toBe(0);
    });

    it('answers a missing digest with ArtifactNotFoundError', async () => {
      const missing = sha256Of(unique('never stored'));
      expect(await store.has(missing)).toBe(false);
      await expect(store.get(missing)).rejects.toBeInstanceOf(ArtifactNotFoundError);
      await expect(store.getToFile(missing, join(work, 'x'))).rejects.toBeInstanceOf(ArtifactNotFoundError);
    });

    it('refuses a key that is not a digest', async () => {
      await expect(store.get('../../etc/passwd')).rejects.toThrow(/not a SHA-256 digest/);
      await expect(store.has('ABC')).rejects.toThrow(/not a SHA-256 digest/);
    });

    it('verifies what it reads: altered bytes are never returned', async () => {
      const data = unique('original');
      const { sha256 } = await store.put(data);
      await subject.corrupt(sha256, unique('tampered'));
      await expect(store.get(sha256)).rejects.toBeInstanceOf(ArtifactCorruptError);
      const target = join(work, 'copy');
      await expect(store.getToFile(sha256, target)).rejects.toBeInstanceOf(ArtifactCorruptError);
      expect(await readdir(work)).toEqual([]);
    });

    it('streams files in and out', async () => {
      const data = Buffer.alloc(3 * 2 ** 20 + 7);
      for (let i = 0; i < data.length; i++) data[i] = (i * 31 + 7) % 251;
      const source = join(work, 'big.bin');
      await writeFile(source, data);
      const stored = await store.putFile(source);
      expect(stored).toEqual({ sha256: sha256Of(data), bytes: data.byteLength });
      const target = join(work, 'out', 'big.bin');
      expect(await store.getToFile(stored.sha256, target)).toEqual(stored);
      expect(Buffer.compare(await readFile(target), data)).toBe(0);
    });

    it('deletes, and deleting a missing object is not an error', async () => {
      const { sha256 } = await store.put(unique('doomed'));
      await store.delete(sha256);
      expect(await store.has(sha256)).toBe(false);
      await expect(store.delete(sha256)).resolves.toBeUndefined();
    });

    it('stores a directory as a bundle named by its manifest', async () => {
      const config = Buffer.from('{"r": 8}');
      const weights = unique('weights');
      const bundle = await putBundle(store, [
        { name: 'adapter_model.safetensors', data: weights },
        { name: 'adapter_config.json', data: config },
      ]);
      expect(bundle.files.map((f) => f.name)).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
      expect((await readBundleManifest(store, bundle.sha256)).files).toEqual(bundle.files);
      const files = await readBundle(store, bundle.sha256);
      expect(files.get('adapter_model.safetensors')?.equals(weights)).toBe(true);
      // The same files are the same bundle.
      await writeFile(join(work, 'adapter_config.json'), config);
      await writeFile(join(work, 'adapter_model.safetensors'), weights);
      expect((await putBundleFromDir(store, work)).sha256).toBe(bundle.sha256);
    });

    it('refuses an object that is not a manifest as a bundle', async () => {
      const { sha256 } = await store.put(unique('plain'));
      await expect(readBundleManifest(store, sha256)).rejects.toBeInstanceOf(InvalidBundleError);
      await expect(putBundle(store, [{ name: '../escape', data: unique('x') }])).rejects.toBeInstanceOf(InvalidBundleError);
    });

    describe('a worker cache over it', () => {
      it('fetches a bundle once into a local directory and keeps within its bound', async () => {
        const a = await putBundle(store, [{ name: 'w.bin', data: Buffer.alloc(600, 1) }, { name: 'c.json', data: unique('a') }]);
        const b = await putBundle(store, [{ name: 'w.bin', data: Buffer.alloc(600, 2) }]);
        const cache = new ArtifactCache(store, { dir: join(work, 'cache'), maxBytes: 1000 });
        const dirA = await cache.withBundle(a.sha256, async (dir) => {
          expect((await readdir(dir)).sort()).toEqual(['c.json', 'w.bin']);
          expect((await readFile(join(dir, 'w.bin')))[0]).toBe(1);
          return dir;
        });
        // b pushes a out: together they pass the bound.
        await cache.withBundle(b.sha256, async (dir) => expect((await readFile(join(dir, 'w.bin')))[0]).toBe(2));
        expect(cache.bytes).toBeLessThanOrEqual(1000);
        await expect(readdir(dirA)).rejects.toThrow(/ENOENT/);
      });

      it('fetches a bundle without its weights for a reader that needs only its config and tokenizer', async () => {
        const model = await putBundle(store, [
          { name: 'model.safetensors', data: Buffer.alloc(900, 5) },
          { name: 'config.json', data: unique('config') },
          { name: 'tokenizer.json', data: unique('tokenizer') },
        ]);
        const cache = new ArtifactCache(store, { dir: join(work, 'cache'), maxBytes: 10_000 });
        await cache.withBundle(model.sha256, async (dir) => expect((await readdir(dir)).sort()).toEqual(['config.json', 'tokenizer.json']), { weights: false });
        expect(cache.bytes).toBeLessThan(900);
        // The whole bundle is an entry of its own.
        await cache.withBundle(model.sha256, async (dir) => expect((await readdir(dir)).sort()).toEqual(['config.json', 'model.safetensors', 'tokenizer.json']));
      });

      it('never evicts an entry a reader holds', async () => {
        const a = await putBundle(store, [{ name: 'w.bin', data: Buffer.alloc(800, 3) }]);
        const b = await putBundle(store, [{ name: 'w.bin', data: Buffer.alloc(800, 4) }]);
        const cache = new ArtifactCache(store, { dir: join(work, 'cache'), maxBytes: 1000 });
        await cache.withBundle(a.sha256, async (dirA) => {
          await cache.withBundle(b.sha256, async () => undefined);
          expect((await readFile(join(dirA, 'w.bin')))[0]).toBe(3);
        });
        expect(cache.bytes).toBeLessThanOrEqual(1000);
      });

      it('refuses a corrupted object and leaves nothing cached', async () => {
        const data = unique('to be corrupted');
        const { sha256 } = await store.put(data);
        await subject.corrupt(sha256, unique('rot'));
        const cache = new ArtifactCache(store, { dir: join(work, 'cache'), maxBytes: 1000 });
        await expect(cache.withFile(sha256, async () => undefined)).rejects.toBeInstanceOf(ArtifactCorruptError);
        expect(cache.bytes).toBe(0);
        expect((await readdir(join(work, 'cache'))).filter((n) => n !== '.tmp')).toEqual([]);
        await subject.corrupt(sha256, data);
        expect(await cache.withFile(sha256, (path) => readFile(path))).toEqual(data);
      });
    });
  });
}
