import { Inject, Injectable } from '@nestjs/common';
import { ARTIFACT_STORE, ArtifactCache, ArtifactStore, putBundleFromDir, withModelFiles } from '@trainyard/artifacts';
import { ModelConfig, PeftAdapter, readPeftAdapter, writePeftAdapter } from '@trainyard/engine';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrainingWorkerConfig } from '../config/training-worker.config';

/**
 * The training worker's artifacts: base models (from the store with BASE_MODEL_SOURCE=store),
 * PEFT adapters in the artifact store: read by bundle digest
 * through the worker's own cache (verified, never the registry's disk), and written as a new
 * bundle whose digest the registry records; and RL jobs' trajectory groups, read by digest.
 */
@Injectable()
export class AdapterArtifacts {
  constructor(
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
    private readonly cache: ArtifactCache,
    @Inject(TrainingWorkerConfig) private readonly config: TrainingWorkerConfig,
  ) {}

  /** Loads a base model from its directory, or from the artifact store with BASE_MODEL_SOURCE=store. */
  loadBaseModel<T>(model: { dir: string; bundle: string | null }, load: (dir: string) => Promise<T>): Promise<T> {
    return withModelFiles(this.cache, this.config.BASE_MODEL_SOURCE, model, load);
  }

  read(bundle: string, config: ModelConfig): Promise<PeftAdapter> {
    return this.cache.withBundle(bundle, (dir) => readPeftAdapter(dir, config));
  }

  /** A JSON object of the store (an RL job's trajectory groups), read whole through the cache. */
  readJson(sha256: string): Promise<unknown> {
    return this.cache.withFile(sha256, async (path) => JSON.parse(await readFile(path, 'utf8')) as unknown);
  }

  /** Stores the adapter's files and returns its bundle's digest. */
  async write(adapter: PeftAdapter): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'trainyard-adapter-'));
    try {
      await writePeftAdapter(dir, adapter);
      return (await putBundleFromDir(this.store, dir)).sha256;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
