import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ArtifactStore, assertDigest } from './artifact-store';
import { readBundleManifest } from './bundles';

/** Suffix of a bundle's entry that holds all but its weights. */
const WITHOUT_WEIGHTS = '-without-weights';
const ENTRY_NAME = /^(file|bundle)-[0-9a-f]{64}(-without-weights)?$/;

/** A model's weights, by the file extensions checkpoints use (a sharded checkpoint's index is JSON, kept). */
export function isWeightsFile(name: string): boolean {
  return /\.(safetensors|bin|pt|pth|gguf|ckpt|h5|msgpack|onnx)$/i.test(name);
}

interface Entry {
  path: string;
  bytes: number;
  /** Readers using the entry's files now: it is not evicted while held. */
  holds: number;
  ready: Promise<void>;
}

export interface ArtifactCacheOptions {
  /**
   * This process's own directory. Empty: a private temporary directory, removed at close
   * (several workers on one machine must never share one: each evicts its own entries).
   */
  dir?: string;
  /** Bytes kept on disk; beyond them the least recently used entries not in use go. */
  maxBytes: number;
}

/**
 * A worker's local copy of the artifacts it reads, fetched by digest from the artifact store
 * and verified on the way in, so a worker needs nothing of the registry's disk. Bounded in
 * bytes: the least recently used entries go first, never one a reader holds (an entry larger
 * than the bound is kept only while held). Files of one bundle share one directory, named by
 * the bundle's digest, so code that reads a directory (a PEFT adapter) reads it as it is.
 *
 * Its entries are dropped at start: what a killed process left there is not trusted.
 */
export class ArtifactCache {
  private dirPath?: string;
  private readonly maxBytes: number;
  /** Insertion order is recency: an entry used is moved to the end. */
  private readonly entries = new Map<string, Entry>();
  private usedBytes = 0;
  private started?: Promise<void>;
  private readonly configured: boolean;

  constructor(
    private readonly store: ArtifactStore,
    options: ArtifactCacheOptions,
  ) {
    this.dirPath = options.dir ? resolve(options.dir) : undefined;
    this.configured = this.dirPath !== undefined;
    this.maxBytes = options.maxBytes;
  }

  private get dir(): string {
    if (!this.dirPath) throw new Error('The artifact cache is not started');
    return this.dirPath;
  }

  /** Removes a temporary directory the cache made itself (a configured one stays, emptied at the next start). */
  async close(): Promise<void> {
    const made = this.started && !this.configured ? this.dirPath : undefined;
    if (made) await rm(made, { recursive: true, force: true });
  }

  /** For Nest: closed with the application. */
  onModuleDestroy(): Promise<void> {
    return this.close();
  }

  /** Bytes on disk now (held entries included). */
  get bytes(): number {
    return this.usedBytes;
  }

  /** Runs `use` with the path of a verified local copy of one object, held until `use` settles. */
  withFile<T>(sha256: string, use: (path: string) => Promise<T>): Promise<T> {
    return this.with(`file-${assertDigest(sha256)}`, use, (target) => this.store.getToFile(sha256, target));
  }

  /**
   * Runs `use` with a local directory holding a bundle's files, each verified, held until `use`
   * settles. With `weights: false`, all but the weights (config, tokenizer, chat template): what
   * a process that counts tokens reads of a model.
   */
  withBundle<T>(sha256: string, use: (dir: string) => Promise<T>, options: { weights?: boolean } = {}): Promise<T> {
    const weights = options.weights ?? true;
    return this.with(`bundle-${assertDigest(sha256)}${weights ? '' : WITHOUT_WEIGHTS}`, use, async (target) => {
      const manifest = await readBundleManifest(this.store, sha256);
      await mkdir(target);
      let bytes = 0;
      for (const file of manifest.files) {
        if (!weights && isWeightsFile(file.name)) continue;
        bytes += (await this.store.getToFile(file.sha256, join(target, file.name))).bytes;
      }
      return { bytes };
    });
  }

  private async with<T>(key: string, use: (path: string) => Promise<T>, fetch: (target: string) => Promise<{ bytes: number }>): Promise<T> {
    await this.start();
    let entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
    } else {
      const path = join(this.dir, key);
      const created: Entry = { path, bytes: 0, holds: 0, ready: Promise.resolve() };
      created.ready = this.fill(path, fetch).then(
        (bytes) => {
          created.bytes = bytes;
          this.usedBytes += bytes;
        },
        (err: unknown) => {
          if (this.entries.get(key) === created) this.entries.delete(key);
          throw err;
        },
      );
      entry = created;
    }
    this.entries.set(key, entry);
    entry.holds++;
    try {
      await entry.ready;
      return await use(entry.path);
    } finally {
      entry.holds--;
      await this.evict();
    }
  }

  /** Fetches into a private temporary path, then renames it into place: a crash leaves no half entry. */
  private async fill(path: string, fetch: (target: string) => Promise<{ bytes: number }>): Promise<number> {
    const temp = join(this.dir, '.tmp', randomUUID());
    await mkdir(join(this.dir, '.tmp'), { recursive: true });
    try {
      const { bytes } = await fetch(temp);
      await rm(path, { recursive: true, force: true });
      await rename(temp, path);
      return bytes;
    } catch (err) {
      await rm(temp, { recursive: true, force: true });
      throw err;
    }
  }

  private async evict(): Promise<void> {
    for (const [key, entry] of this.entries) {
      if (this.usedBytes <= this.maxBytes) return;
      if (entry.holds > 0) continue;
      this.entries.delete(key);
      this.usedBytes -= entry.bytes;
      await rm(entry.path, { recursive: true, force: true });
    }
  }

  private start(): Promise<void> {
    this.started ??= (async () => {
      this.dirPath ??= await mkdtemp(join(tmpdir(), 'trainyard-artifact-cache-'));
      await mkdir(this.dir, { recursive: true });
      // Only what this cache writes, in case the directory was set to one that holds other things.
      for (const name of await readdir(this.dir)) {
        if (name === '.tmp' || ENTRY_NAME.test(name)) await rm(join(this.dir, name), { recursive: true, force: true });
      }
    })();
    return this.started;
  }
}

/**
 * Runs `use` on a base model's directory: with `source` 'store' and the model published (a
 * bundle digest), a verified local copy from the cache, held while `use` runs (a model is
 * read whole while it loads); otherwise the directory the registry named, on a shared volume.
 */
export function withModelFiles<T>(
  cache: ArtifactCache,
  source: 'volume' | 'store',
  model: { dir: string; bundle?: string | null },
  use: (dir: string) => Promise<T>,
): Promise<T> {
  return source === 'store' && model.bundle ? cache.withBundle(model.bundle, use) : use(model.dir);
}
