import { Inject, Injectable, Logger } from '@nestjs/common';
import { ArtifactCache } from '@trainyard/artifacts';
import type { InferenceWorkItem } from '@trainyard/contracts';
import { applyAdapter, LoadedModel, LoraAttachment, readPeftAdapter } from '@trainyard/engine';
import { InferenceWorkerConfig } from '../config/inference-worker.config';

export type Adapter = NonNullable<InferenceWorkItem['adapter']>;

/**
 * LoRA adapters loaded from the artifact store, keyed by their bundle's digest, which pins
 * every byte of their files: a cached adapter is never stale. The files come through the
 * worker's own ArtifactCache (fetched by digest and verified; the registry's disk is never
 * read). Each one is kept detached; the scheduler's LoraRouter hooks in, row by row,
 * those a forward pass needs. The least recently used unheld adapter goes beyond the limit.
 */
@Injectable()
export class AdapterCache {
  private readonly logger = new Logger(AdapterCache.name);
  private readonly adapters = new Map<string, Promise<LoraAttachment>>();
  private readonly holders = new Map<string, number>();

  constructor(
    @Inject(InferenceWorkerConfig) private readonly config: InferenceWorkerConfig,
    private readonly files: ArtifactCache,
  ) {}

  static key(adapter: Adapter): string {
    return adapter.bundle;
  }

  acquire(lm: LoadedModel, adapter: Adapter): Promise<LoraAttachment> {
    const key = AdapterCache.key(adapter);
    this.holders.set(key, (this.holders.get(key) ?? 0) + 1);
    let loaded = this.adapters.get(key);
    if (loaded) {
      this.adapters.delete(key);
    } else {
      this.logger.log(`loading adapter ${adapter.bundle} (model ${adapter.model_id}, step ${adapter.step})`);
      loaded = this.files.withBundle(adapter.bundle, (dir) => readPeftAdapter(dir, lm.config)).then((files) => {
        const attachment = applyAdapter(lm, files);
        attachment.detach();
        return attachment;
      });
      loaded.catch(() => this.adapters.delete(key));
    }
    this.adapters.set(key, loaded);
    this.evict();
    return loaded;
  }

  release(adapter: Adapter): void {
    const key = AdapterCache.key(adapter);
    const count = (this.holders.get(key) ?? 1) - 1;
    if (count > 0) this.holders.set(key, count);
    else this.holders.delete(key);
  }

  private evict(): void {
    for (const key of this.adapters.keys()) {
      if (this.adapters.size <= this.config.MAX_LOADED_ADAPTERS) return;
      if ((this.holders.get(key) ?? 0) > 0) continue;
      const adapter = this.adapters.get(key);
      this.adapters.delete(key);
      adapter?.then((a) => a.dispose(), () => undefined);
    }
  }
}
