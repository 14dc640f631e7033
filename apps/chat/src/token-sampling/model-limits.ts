import { Injectable, Logger } from '@nestjs/common';
import { ModelLimits, readModelLimits } from '@trainyard/engine/wire';
import { ExpiringLru } from '@trainyard/runtime';

/** A base model's config is read again after this, in case the directory was replaced. */
const LIMITS_TTL_MS = 10 * 60_000;
/** Base models whose limits are kept (two numbers each). */
const MAX_MODELS = 256;

/**
 * Each base model's vocabulary size and context window, read from its config.json (no weights,
 * no tokenizer) and kept per directory, to check a token sampling before it is queued. Null for
 * a directory this replica cannot read (a deployment that does not mount the models): the
 * inference worker's own check then refuses a bad prompt, later.
 */
@Injectable()
export class ModelLimitsCache {
  private readonly logger = new Logger(ModelLimitsCache.name);
  private readonly limits: ExpiringLru<ModelLimits>;
  /** Directories already reported unreadable, so that each is logged once. */
  private readonly unreadable = new Set<string>();

  constructor() {
    this.limits = new ExpiringLru({ maxEntries: MAX_MODELS, ttlMs: LIMITS_TTL_MS });
  }

  of(dir: string): ModelLimits | null {
    const cached = this.limits.get(dir);
    if (cached) return cached;
    try {
      const limits = readModelLimits(dir);
      this.limits.set(dir, limits);
      this.unreadable.delete(dir);
      return limits;
    } catch (err) {
      if (!this.unreadable.has(dir)) {
        this.unreadable.add(dir);
        this.logger.warn(`Cannot read the config of ${dir} (${(err as Error).message}): its token samplings are checked by the inference worker only`);
      }
      return null;
    }
  }
}
