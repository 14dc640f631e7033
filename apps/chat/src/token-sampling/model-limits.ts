import { Injectable, Logger } from '@nestjs/common';
import { ModelLimits, readModelLimits } from '@trainyard/engine/wire';
import { ExpiringLru } from '@trainyard/runtime';
import { BaseModelFiles, BaseModelRef } from '../base-models/base-model-files';

/** A base model's config is read again after this, in case its directory was replaced. */
const LIMITS_TTL_MS = 10 * 60_000;
/** Base models whose limits are kept (two numbers each). */
const MAX_MODELS = 256;

/**
 * Each base model's vocabulary size and context window, read from its config.json (no weights,
 * no tokenizer; from its directory or its bundle: BaseModelFiles) and kept per model, to check a
 * token sampling before it is queued. Null for a model this replica cannot read: the
 * inference worker's own check then refuses a bad prompt, later.
 */
@Injectable()
export class ModelLimitsCache {
  private readonly logger = new Logger(ModelLimitsCache.name);
  private readonly limits: ExpiringLru<ModelLimits>;
  /** Models already reported unreadable, so that each is logged once. */
  private readonly unreadable = new Set<string>();

  constructor(private readonly files: BaseModelFiles) {
    this.limits = new ExpiringLru({ maxEntries: MAX_MODELS, ttlMs: LIMITS_TTL_MS });
  }

  async of(model: BaseModelRef): Promise<ModelLimits | null> {
    const key = this.files.keyOf(model);
    const cached = this.limits.get(key);
    if (cached) return cached;
    try {
      const limits = await this.files.read(model, readModelLimits);
      this.limits.set(key, limits);
      this.unreadable.delete(key);
      return limits;
    } catch (err) {
      if (!this.unreadable.has(key)) {
        this.unreadable.add(key);
        this.logger.warn(`Cannot read the config of ${key} (${(err as Error).message}): its token samplings are checked by the inference worker only`);
      }
      return null;
    }
  }
}
