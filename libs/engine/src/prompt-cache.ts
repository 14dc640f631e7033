import { KVCache } from './model/kv-cache';
import type { LlamaModel } from './model/llama';

/**
 * Keys and values of recently prefilled prompts, so that a prompt sharing its beginning with
 * one of them is prefilled only from where they differ (automatic prefix caching, as in vLLM).
 * Sampling several answers to one prompt (n > 1, or an RL group sent as separate requests)
 * prefills it once; a conversation's next turn prefills only what was added.
 *
 * An entry is valid for one model object and one namespace: the caller names everything else
 * the keys and values depend on, i.e. the LoRA adapter the prompt was prefilled with. The
 * whole cache holds at most `maxBytes` of keys, values and final logits; the least recently
 * used entries go first.
 */
export class PromptCache {
  /** Least recently used first. */
  private entries: PromptEntry[] = [];
  private held = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.held;
  }

  get size(): number {
    return this.entries.length;
  }

  /**
   * The longest beginning of `prompt` held for this model and namespace, as a fresh one-row
   * cache the caller owns (merge it or dispose it), or null. When all of the prompt is held,
   * its logits for the first new token come with it and nothing is left to prefill.
   */
  lookup(model: LlamaModel, namespace: string, prompt: readonly number[]): PromptHit | null {
    let best: PromptEntry | null = null;
    let bestLength = 0;
    for (const entry of this.entries) {
      if (entry.model !== model || entry.namespace !== namespace) continue;
      const length = commonPrefix(entry.tokens, prompt);
      // The logits of the last prompt token are only known where an entry ends exactly there.
      const usable = length === prompt.length && length !== entry.tokens.length ? length - 1 : length;
      if (usable > bestLength) [best, bestLength] = [entry, usable];
    }
    if (!best) return null;
    this.touch(best);
    const whole = bestLength === prompt.length;
    return { cache: best.cache.prefix(bestLength), length: bestLength, logits: whole ? best.logits.slice() : null };
  }

  /**
   * Keeps a prefilled prompt: `cache` is its one-row cache (its tensors are shared, not
   * copied: the caller may go on to merge or dispose its own copy) and `logits` those for
   * the token after it. An entry that is a beginning of the new one is dropped.
   */
  store(model: LlamaModel, namespace: string, prompt: readonly number[], cache: KVCache, logits: Float32Array): void {
    const kept = cache.prefix(prompt.length);
    const entry: PromptEntry = { model, namespace, tokens: [...prompt], cache: kept, logits: logits.slice(), bytes: kept.bytes + logits.byteLength };
    if (entry.bytes > this.maxBytes) {
      kept.dispose();
      return;
    }
    this.entries = this.entries.filter((old) => {
      const redundant = old.model === model && old.namespace === namespace && old.tokens.length <= prompt.length && commonPrefix(old.tokens, prompt) === old.tokens.length;
      if (redundant) this.drop(old);
      return !redundant;
    });
    this.entries.push(entry);
    this.held += entry.bytes;
    while (this.held > this.maxBytes) this.drop(this.entries.shift() as PromptEntry);
  }

  /** Forgets every entry of `model` (it is being unloaded), or every entry. */
  clear(model?: LlamaModel): void {
    this.entries = this.entries.filter((entry) => {
      const gone = !model || entry.model === model;
      if (gone) this.drop(entry);
      return !gone;
    });
  }

  private touch(entry: PromptEntry): void {
    this.entries.splice(this.entries.indexOf(entry), 1);
    this.entries.push(entry);
  }

  private drop(entry: PromptEntry): void {
    entry.cache.dispose();
    this.held -= entry.bytes;
  }
}

export interface PromptHit {
  /** The prompt's first `length` tokens, prefilled: a one-row cache owned by the caller. */
  cache: KVCache;
  length: number;
  /** Logits for the token after the prompt when all of it was held, else null. */
  logits: Float32Array | null;
}

interface PromptEntry {
  model: LlamaModel;
  namespace: string;
  tokens: number[];
  cache: KVCache;
  logits: Float32Array;
  bytes: number;
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
