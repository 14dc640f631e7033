import { DecodeBatch } from './decode-batch';
import type { DrawnToken, RowDraw } from './kernels/sample';
import type { LlamaModel } from './model/llama';
import type { SeededRandom } from './random';
import { SampledToken, SamplingParams, createRng, drawsBeforeProcessing, isGreedy, sampleProcessed, sampleToken } from './sampling';
import { IncrementalDecoder, TextTokenizer } from './tokenizer';

export interface GenerationParams extends SamplingParams {
  /** Most tokens to generate. Default 256. */
  maxTokens?: number;
  /** Generation stops before the first occurrence of any of these; it is not part of the text. */
  stop?: string[];
  /** Tokens that end generation besides the model's end-of-sequence ids. */
  stopTokenIds?: number[];
  /** Keep going through end-of-sequence tokens (benchmarks). */
  ignoreEos?: boolean;
  /**
   * Under a grammar whose text is one document (JSON mode): whether the tokens generated so far
   * form a complete one. Asked when the budget runs out: a document the grammar closed on the
   * last token is not cut off, so it finishes with 'stop' rather than 'length'.
   */
  documentComplete?: (generated: readonly number[]) => boolean;
}

export type FinishReason = 'stop' | 'length';

export interface GenerationStep {
  token: SampledToken;
  /** Text that became final with this token (held back while it could start a stop string). */
  delta: string;
  finished: boolean;
}

/**
 * The per-sequence half of decoding: sampling state, stop conditions and detokenization.
 * Feed it the logits of the sequence's last position; it returns the next token. A decode
 * loop (generate() below, or the inference worker's scheduler) owns the model and batching.
 */
export class SequenceGenerator {
  readonly tokens: SampledToken[] = [];
  finishReason: FinishReason | null = null;
  /** The stop string or token id that ended generation, if one did. */
  stoppedBy: string | number | null = null;
  private readonly rng: SeededRandom;
  private readonly decoder: IncrementalDecoder;
  private readonly endIds: Set<number>;
  private readonly maxTokens: number;
  private readonly stops: string[];
  private visible = '';
  private emitted = 0;

  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly params: GenerationParams,
    eosTokenIds: number[],
  ) {
    this.rng = createRng(params.seed);
    this.decoder = new IncrementalDecoder(tokenizer);
    this.endIds = new Set([...(params.ignoreEos ? [] : eosTokenIds), ...(params.stopTokenIds ?? [])]);
    this.maxTokens = params.maxTokens ?? 256;
    this.stops = (params.stop ?? []).filter((s) => s.length > 0);
    if (this.maxTokens < 1) throw new Error('maxTokens must be at least 1');
  }

  get done(): boolean {
    return this.finishReason !== null;
  }

  /** The generated text so far (final when done). */
  get text(): string {
    return this.done ? this.visible : this.visible.slice(0, this.emitted);
  }

  /** Tokens the sequence may still generate before its maxTokens. */
  get tokensLeft(): number {
    return this.maxTokens - this.tokens.length;
  }

  get tokenIds(): number[] {
    return this.tokens.map((t) => t.id);
  }

  next(logits: Float32Array): GenerationStep {
    if (this.done) throw new Error('generation already finished');
    return this.take(sampleToken(logits, this.params, this.rng, this.tokenIds));
  }

  /**
   * Whether the next token can be drawn without this sequence's logits, from a temperature and
   * a uniform draw (DecodeBatch.stepDrawn, on the GPU on webgpu): not with top-k, top-p, a
   * logits processor or top logprobs, which need the whole row.
   */
  get drawsWithoutLogits(): boolean {
    const p = this.params;
    return !p.logitsProcessor && (p.topK ?? 0) <= 0 && (p.topP ?? 1) >= 1 && (p.topLogprobs ?? 0) <= 0;
  }

  /**
   * The next token's draw, taken from this sequence's random source as next() takes it (none
   * when greedy): give the token drawn with it to accept(). Only where drawsWithoutLogits.
   */
  draw(): RowDraw {
    // Greedy as next() is: at temperature 0, and under a top_p of 0 (drawsThenChecks allows it).
    return isGreedy(this.params) ? { temperature: 0, u: 0 } : { temperature: this.params.temperature ?? 1, u: this.rng.next() };
  }

  /** Goes on with a token drawn elsewhere with draw()'s draw: what next() does with the logits. */
  accept(drawn: DrawnToken): GenerationStep {
    if (this.done) throw new Error('generation already finished');
    const logprob = (this.params.logprobs ?? true) ? drawn.logprob : NaN;
    return this.take({ id: drawn.id, logprob, topLogprobs: [] });
  }

  /**
   * Whether the next token can be drawn elsewhere from this sequence's logits as they are and
   * then checked against its logits processor (a grammar's quick check; drawsBeforeProcessing),
   * its logits needed only where the check refuses it: give draw()'s token to acceptChecked.
   * Not where the check would refuse any token (quickCheckApplies: a grammar near the end of
   * its budget): the logits are needed then, and next() draws from them as a refused draw
   * would, taking the same draws from the random source.
   */
  get drawsThenChecks(): boolean {
    return drawsBeforeProcessing(this.params) && (this.params.quickCheckApplies?.(this.tokenIds) ?? true);
  }

  /**
   * Goes on with a token drawn elsewhere with draw()'s draw from the logits as they are, where
   * the quick check allows it, as next() would; null where it refuses it: give the same logits
   * to nextRefused.
   */
  acceptChecked(drawn: DrawnToken): GenerationStep | null {
    if (this.done) throw new Error('generation already finished');
    return this.params.quickCheck?.(drawn.id, this.tokenIds) ? this.accept(drawn) : null;
  }

  /** The next token from the logits whose first draw acceptChecked refused: drawn again from what the processor leaves, as next() does then. */
  nextRefused(logits: Float32Array): GenerationStep {
    if (this.done) throw new Error('generation already finished');
    return this.take(sampleProcessed(logits, this.params, this.rng, this.tokenIds));
  }

  private take(token: SampledToken): GenerationStep {
    this.tokens.push(token);

    if (this.endIds.has(token.id)) {
      this.finish('stop', token.id);
      return { token, delta: this.release(this.visible.length), finished: true };
    }
    this.visible += this.decoder.push(token.id);
    const stopAt = this.findStop();
    if (stopAt) {
      this.visible = this.visible.slice(0, stopAt.index);
      this.finish('stop', stopAt.stop);
      return { token, delta: this.release(this.visible.length), finished: true };
    }
    if (this.tokens.length >= this.maxTokens) {
      this.visible += this.decoder.flush();
      this.finish(this.params.documentComplete?.(this.tokenIds) ? 'stop' : 'length', null);
      return { token, delta: this.release(this.visible.length), finished: true };
    }
    return { token, delta: this.release(this.visible.length - this.heldBack()), finished: false };
  }

  private finish(reason: FinishReason, by: string | number | null): void {
    this.finishReason = reason;
    this.stoppedBy = by;
  }

  private release(upTo: number): string {
    if (upTo <= this.emitted) return '';
    const delta = this.visible.slice(this.emitted, upTo);
    this.emitted = upTo;
    return delta;
  }

  private findStop(): { index: number; stop: string } | null {
    let found: { index: number; stop: string } | null = null;
    for (const stop of this.stops) {
      // Only text not yet searched can hold a new match.
      const from = Math.max(0, this.emitted - stop.length + 1);
      const index = this.visible.indexOf(stop, from);
      if (index >= 0 && (!found || index < found.index)) found = { index, stop };
    }
    return found;
  }

  /** Length of the longest tail of the text that could be the start of a stop string. */
  private heldBack(): number {
    let held = 0;
    for (const stop of this.stops) {
      for (let n = Math.min(stop.length - 1, this.visible.length); n > held; n--) {
        if (this.visible.endsWith(stop.slice(0, n))) {
          held = n;
          break;
        }
      }
    }
    return held;
  }
}

export interface GenerationResult {
  tokens: SampledToken[];
  tokenIds: number[];
  text: string;
  finishReason: FinishReason;
  stoppedBy: string | number | null;
  promptTokens: number;
}

export interface Generator {
  model: LlamaModel;
  tokenizer: TextTokenizer;
  eosTokenIds: number[];
}

/**
 * Generates continuations of several prompts together, one decode step for all of them at
 * a time; sequences leave the batch as they finish. onStep sees every token as it comes.
 */
export async function generateBatch(
  lm: Generator,
  prompts: number[][],
  params: GenerationParams | GenerationParams[],
  onStep?: (index: number, step: GenerationStep) => void,
): Promise<GenerationResult[]> {
  const batch = new DecodeBatch<number>(lm.model);
  const generators = prompts.map((_, i) => new SequenceGenerator(lm.tokenizer, Array.isArray(params) ? params[i] : params, lm.eosTokenIds));
  try {
    const pending = new Map<number, number>();
    const advance = (i: number, logits: Float32Array) => {
      const step = generators[i].next(logits);
      onStep?.(i, step);
      if (step.finished) {
        if (batch.has(i)) batch.leave(i);
      } else {
        pending.set(i, step.token.id);
      }
    };
    for (let i = 0; i < prompts.length; i++) advance(i, await batch.join(i, prompts[i]));
    while (pending.size > 0) {
      const next = new Map(pending);
      pending.clear();
      const logits = await batch.step(next);
      for (const [i, l] of logits) advance(i, l);
    }
  } finally {
    batch.dispose();
  }
  return generators.map((g, i) => ({
    tokens: g.tokens,
    tokenIds: g.tokenIds,
    text: g.text,
    finishReason: g.finishReason as FinishReason,
    stoppedBy: g.stoppedBy,
    promptTokens: prompts[i].length,
  }));
}

export async function generate(
  lm: Generator,
  prompt: number[],
  params: GenerationParams = {},
  onStep?: (step: GenerationStep) => void,
): Promise<GenerationResult> {
  const [result] = await generateBatch(lm, [prompt], params, onStep && ((_, step) => onStep(step)));
  return result;
}
