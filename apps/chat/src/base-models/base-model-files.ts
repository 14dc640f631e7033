import { Inject, Injectable, Optional } from '@nestjs/common';
import { ArtifactCache } from '@trainyard/artifacts';
import type { ResolveModelReply } from '@trainyard/contracts';
import { ChatConfig } from '../config/chat.config';

/** A resolved base model, as far as reading its files goes. */
export type BaseModelRef = Pick<ResolveModelReply, 'base_model_dir' | 'base_model_bundle'>;

/**
 * Where chat reads a base model's small files (config, tokenizer, chat template) to check a
 * request before it is queued: with BASE_MODEL_SOURCE=store and the model published, a copy of
 * its bundle without the weights, fetched by digest into the artifact cache (no models volume
 * needed); otherwise the directory the registry named, on a models volume this replica mounts.
 */
@Injectable()
export class BaseModelFiles {
  private readonly fromStore: boolean;

  constructor(
    @Inject(ChatConfig) config: ChatConfig,
    @Optional() private readonly cache?: ArtifactCache,
  ) {
    this.fromStore = config.BASE_MODEL_SOURCE === 'store' && cache !== undefined;
  }

  /** Names the model's files as they are: its bundle's digest when read from the store, else its directory. */
  keyOf(model: BaseModelRef): string {
    return this.bundleOf(model) ?? model.base_model_dir;
  }

  /** Runs `read` on a local directory holding the model's files (all but the weights). */
  async read<T>(model: BaseModelRef, read: (dir: string) => T): Promise<T> {
    const bundle = this.bundleOf(model);
    if (bundle && this.cache) return this.cache.withBundle(bundle, async (dir) => read(dir), { weights: false });
    return read(model.base_model_dir);
  }

  private bundleOf(model: BaseModelRef): string | null {
    return this.fromStore ? model.base_model_bundle : null;
  }
}
