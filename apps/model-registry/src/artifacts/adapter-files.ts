import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  ARTIFACT_STORE,
  ArtifactStore,
  InvalidBundleError,
  putBundleFromDir,
  readBundleManifest,
  ArtifactNotFoundError,
  StoredBundle,
} from '@trainyard/artifacts';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  DEFAULT_LORA_SPEC,
  initLoraWeights,
  ModelConfig,
  readModelConfig,
  writePeftAdapter,
} from '@trainyard/engine/files';
import type { InstalledBaseModel } from '../base-models/base-models.service';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { artifactRef, digestOfRef } from '../common/artifact-ref';
import { LegacyArtifactDirs } from './legacy-artifact-dirs';

/** Where a checkpoint's adapter was stored, as its row records it. */
export interface StoredAdapter {
  /** `sha256:<bundle digest>` (a legacy row: a directory under ARTIFACT_ROOT). */
  adapterPath: string;
  /** SHA-256 of adapter_model.safetensors. */
  adapterSha256: string;
}

const ADAPTER_FILES = new Set([ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]);

/**
 * The PEFT adapters behind checkpoints: bundles (adapter_config.json and
 * adapter_model.safetensors) in the artifact store. Objects are shared by every row that
 * names the same bytes, so removing a checkpoint removes no object: the sweep deletes those no
 * row refers to any more.
 */
@Injectable()
export class AdapterFiles {
  private readonly logger = new Logger(AdapterFiles.name);

  constructor(
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
    private readonly legacy: LegacyArtifactDirs,
  ) {}

  /**
   * The untrained adapter a new model starts from: A random (seeded by the model id, so it
   * is reproducible), B zero, so the model answers exactly like its base until trained.
   */
  async writeInitial(modelId: string, base: InstalledBaseModel): Promise<StoredAdapter> {
    const config = await this.trainableConfig(base);
    const dir = await mkdtemp(join(tmpdir(), 'trainyard-adapter-'));
    try {
      await writePeftAdapter(dir, { baseModel: base.id, spec: DEFAULT_LORA_SPEC, tensors: initLoraWeights(config, DEFAULT_LORA_SPEC, seedFrom(modelId)) });
      return stored(await putBundleFromDir(this.store, dir));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * A trained adapter the worker stored in the artifact store: recorded only if the bundle is
   * there, whole, and a PEFT adapter (a bad digest is the worker's problem, said clearly).
   */
  async checkTrained(bundleSha256: string): Promise<StoredAdapter> {
    let files;
    try {
      files = (await readBundleManifest(this.store, bundleSha256)).files;
    } catch (err) {
      if (err instanceof ArtifactNotFoundError || err instanceof InvalidBundleError) throw ServiceError.invalid(`adapter_bundle: ${err.message}`, 'adapter_bundle');
      throw err;
    }
    const names = files.map((f) => f.name);
    if (!names.includes(ADAPTER_WEIGHTS_FILE) || !names.every((n) => ADAPTER_FILES.has(n))) {
      throw ServiceError.invalid(`An adapter is ${[...ADAPTER_FILES].join(' and ')}; the bundle holds ${names.join(', ')}`, 'adapter_bundle');
    }
    for (const file of files) {
      if (!(await this.store.has(file.sha256))) throw ServiceError.invalid(`adapter_bundle: ${file.name} (${file.sha256}) is not in the artifact store`, 'adapter_bundle');
    }
    return stored({ sha256: bundleSha256, files });
  }

  /**
   * Throws unless the adapter's manifest and files are all in the store: called under the
   * references lock just before a row comes to name them (see references-lock.ts).
   */
  async assertStored(adapter: StoredAdapter): Promise<void> {
    const digest = digestOfRef(adapter.adapterPath);
    if (!digest) return;
    const present = await readBundleManifest(this.store, digest).then(
      async (manifest) => (await Promise.all(manifest.files.map((f) => this.store.has(f.sha256)))).every(Boolean),
      (err: unknown) => {
        if (err instanceof ArtifactNotFoundError) return false;
        throw err;
      },
    );
    if (!present) throw new ServiceError(ErrorCode.Unavailable, `Adapter ${digest} was removed from the artifact store by its sweep as it was being recorded; try again`);
  }

  /**
   * The bundle a checkpoint's row names. A legacy row (a directory under ARTIFACT_ROOT) is
   * copied into the store and `upgraded` is called with the new reference, to record it.
   */
  async bundleOf(adapterPath: string, upgraded: (adapter: StoredAdapter) => Promise<void>): Promise<string> {
    const digest = digestOfRef(adapterPath);
    if (digest) return digest;
    const adapter = stored(await putBundleFromDir(this.store, this.legacy.localPath(adapterPath)));
    await upgraded(adapter);
    // The directory stays until the sweep finds no row naming it: another replica may be reading it now.
    this.logger.log(`Copied legacy adapter ${adapterPath} into the artifact store as ${adapter.adapterPath}`);
    return digestOfRef(adapter.adapterPath) as string;
  }

  /** Only legacy directories are removed here; objects go with the sweep once unreferenced. */
  async remove(adapterPath: string): Promise<void> {
    if (!digestOfRef(adapterPath)) await this.legacy.remove(adapterPath);
  }

  removeAllOf(modelId: string): Promise<void> {
    return this.legacy.remove(`adapters/${modelId}`);
  }

  private async trainableConfig(base: InstalledBaseModel): Promise<ModelConfig> {
    try {
      return await readModelConfig(base.dir);
    } catch (err) {
      const reason = (err as Error).message.replace(base.dir, base.id);
      throw ServiceError.invalid(`Base model "${base.id}" cannot be trained: ${reason}`, 'base_model');
    }
  }
}

function stored(bundle: StoredBundle): StoredAdapter {
  const weights = bundle.files.find((f) => f.name === ADAPTER_WEIGHTS_FILE);
  if (!weights) throw ServiceError.invalid(`The adapter has no ${ADAPTER_WEIGHTS_FILE}`, 'adapter_bundle');
  return { adapterPath: artifactRef(bundle.sha256), adapterSha256: weights.sha256 };
}

function seedFrom(modelId: string): number {
  return parseInt(modelId.replace(/-/g, '').slice(0, 8), 16);
}
