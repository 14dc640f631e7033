import { Inject, Injectable } from '@nestjs/common';
import { ServiceError } from '@trainyard/contracts';
import {
  ADAPTER_WEIGHTS_FILE,
  DEFAULT_LORA_SPEC,
  initLoraWeights,
  ModelConfig,
  readModelConfig,
  writePeftAdapter,
} from '@trainyard/engine/files';
import type { InstalledBaseModel } from '../base-models/base-models.service';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ARTIFACT_STORE, artifactKeys, ArtifactStore } from './artifact-store';

/** Where a checkpoint's adapter was stored, as its row records it. */
export interface StoredAdapter {
  adapterPath: string;
  adapterSha256: string;
}

/** The PEFT adapter directories behind checkpoints, in the artifact store. */
@Injectable()
export class AdapterFiles {
  constructor(@Inject(ARTIFACT_STORE) private readonly store: ArtifactStore) {}

  /**
   * The untrained adapter a new model starts from: A random (seeded by the model id, so it
   * is reproducible), B zero, so the model answers exactly like its base until trained.
   */
  async writeInitial(modelId: string, checkpointId: string, base: InstalledBaseModel): Promise<StoredAdapter> {
    const config = await this.trainableConfig(base);
    const adapterPath = artifactKeys.adapter(modelId, checkpointId);
    const files = await this.store.putDirectory(adapterPath, (dir) =>
      writePeftAdapter(dir, {
        baseModel: base.id,
        spec: DEFAULT_LORA_SPEC,
        tensors: initLoraWeights(config, DEFAULT_LORA_SPEC, seedFrom(modelId)),
      }),
    );
    const weights = files.find((f) => f.name === ADAPTER_WEIGHTS_FILE);
    if (!weights) throw new Error(`Adapter ${adapterPath} was written without ${ADAPTER_WEIGHTS_FILE}`);
    return { adapterPath, adapterSha256: weights.sha256 };
  }

  /**
   * A trained adapter's files, stored under the checkpoint's key. A directory left there by an
   * earlier attempt that died before its row was written is replaced (no row refers to it).
   */
  async writeTrained(modelId: string, checkpointId: string, files: { name: string; data: Uint8Array }[]): Promise<StoredAdapter> {
    const adapterPath = artifactKeys.adapter(modelId, checkpointId);
    await this.store.remove(adapterPath);
    const stored = await this.store.putDirectory(adapterPath, async (dir) => {
      for (const file of files) await writeFile(join(dir, file.name), file.data);
    });
    const weights = stored.find((f) => f.name === ADAPTER_WEIGHTS_FILE);
    if (!weights) throw ServiceError.invalid(`The adapter has no ${ADAPTER_WEIGHTS_FILE}`);
    return { adapterPath, adapterSha256: weights.sha256 };
  }

  remove(adapterPath: string): Promise<void> {
    return this.store.remove(adapterPath);
  }

  removeAllOf(modelId: string): Promise<void> {
    return this.store.remove(artifactKeys.modelAdapters(modelId));
  }

  localPath(adapterPath: string): string {
    return this.store.localPath(adapterPath);
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

function seedFrom(modelId: string): number {
  return parseInt(modelId.replace(/-/g, '').slice(0, 8), 16);
}
