import type { SampledTokenSequence, SampleTokensResult, TokenSampleEvent, TokenSampleWorkItem, TopkTokenLogprobs } from '@trainyard/contracts';
import { DrawnToken, GenerationStep, LoadedModel, PromptScores, RowDraw, SequenceGenerator } from '@trainyard/engine';
import { ChoiceSequence, DecodingWork, REFUSED } from './decoding-work';
import type { ErrorEvent } from './inference-events';

const SEEDS = 2 ** 32;

/**
 * One token sampling on this worker (Tinker's asample): num_samples sequences of the same
 * prompt token ids, decoded in the batch of their base model beside chat completions, each
 * with its own SequenceGenerator (sample i seeded with seed + i). No text goes out: once every
 * sample has finished, one result event carries their tokens, their logprobs (the distribution
 * each token was drawn from; see TokenSamplingParams) and, when asked for, the prompt's own
 * logprobs from the first sample's prefill.
 */
export class RunningSampling implements DecodingWork {
  readonly generators: SequenceGenerator[];
  readonly sequences: readonly ChoiceSequence[];
  readonly promptScoring: number | null;
  cancelled = false;
  cachedTokens = 0;
  private scores: PromptScores | null = null;
  private finished = 0;

  constructor(
    readonly item: TokenSampleWorkItem,
    readonly lm: LoadedModel,
    /** Tokens each sample may generate: max_tokens, or less where the context window ends first. */
    maxTokens: number,
    private readonly emit: (event: TokenSampleEvent) => void,
  ) {
    const { sampling_params: p, num_samples } = item;
    const stopTokens = p.stop.filter((s): s is number => typeof s === 'number');
    const stopStrings = p.stop.filter((s): s is string => typeof s === 'string');
    // Any integer seed, as 32 bits (what SeededRandom keeps), so that seed + i stays exact.
    const seed = p.seed === null ? null : ((p.seed % SEEDS) + SEEDS) % SEEDS;
    this.generators = Array.from(
      { length: num_samples },
      (_, i) =>
        new SequenceGenerator(
          lm.tokenizer,
          {
            temperature: p.temperature,
            topP: p.top_p,
            topK: p.top_k > 0 ? p.top_k : 0,
            seed: seed === null ? undefined : seed + i,
            maxTokens,
            stop: stopStrings,
            stopTokenIds: stopTokens,
            logprobs: true,
          },
          lm.eosTokenIds,
        ),
    );
    this.sequences = this.generators.map((_, i) => new ChoiceSequence(this, i));
    this.promptScoring = item.prompt_logprobs || item.topk_prompt_logprobs > 0 ? item.topk_prompt_logprobs : null;
  }

  get id(): string {
    return this.item.completion_id;
  }

  get promptIds(): number[] {
    return this.item.prompt_tokens;
  }

  get done(): boolean {
    return this.finished === this.generators.length;
  }

  scored(scores: PromptScores): void {
    this.scores = scores;
  }

  advance(index: number, logits: Float32Array): number | null {
    return this.proceed(this.generators[index].next(logits));
  }

  tokensLeft(index: number): number {
    return this.generators[index].tokensLeft;
  }

  drawsWithoutLogits(index: number): boolean {
    return this.generators[index].drawsWithoutLogits;
  }

  draw(index: number): RowDraw {
    return this.generators[index].draw();
  }

  advanceDrawn(index: number, token: DrawnToken): number | null {
    return this.proceed(this.generators[index].accept(token));
  }

  drawsThenChecks(index: number): boolean {
    return this.generators[index].drawsThenChecks;
  }

  advanceChecked(index: number, token: DrawnToken): number | null | typeof REFUSED {
    const step = this.generators[index].acceptChecked(token);
    return step ? this.proceed(step) : REFUSED;
  }

  advanceRefused(index: number, logits: Float32Array): number | null {
    return this.proceed(this.generators[index].nextRefused(logits));
  }

  fail(error: ErrorEvent): void {
    this.emit(error);
  }

  abandon(): void {
    this.cancelled = true;
  }

  private proceed(step: GenerationStep): number | null {
    if (!step.finished) return step.token.id;
    this.finished++;
    if (this.done) this.emit({ type: 'result', result: this.result() });
    return null;
  }

  private result(): SampleTokensResult {
    const sequences: SampledTokenSequence[] = this.generators.map((g) => ({
      tokens: g.tokenIds,
      logprobs: g.tokens.map((t) => float32Digits(t.logprob)),
      stop_reason: g.finishReason ?? 'stop',
    }));
    return {
      sequences,
      prompt_logprobs: this.item.prompt_logprobs ? promptLogprobs(this.scores) : null,
      topk_prompt_logprobs: this.item.topk_prompt_logprobs > 0 ? topkPromptLogprobs(this.scores) : null,
      prompt_cache_hit_tokens: this.cachedTokens,
    };
  }
}

/** The first prompt token has nothing before it: null, then one logprob per token. */
function promptLogprobs(scores: PromptScores | null): (number | null)[] {
  if (!scores) throw new Error('the prompt was not scored');
  return [null, ...Array.from(scores.logprobs, float32Digits)];
}

function topkPromptLogprobs(scores: PromptScores | null): (TopkTokenLogprobs | null)[] {
  const top = scores?.top;
  if (!scores || !top) throw new Error('the prompt was not scored with its top-k');
  const rows: (TopkTokenLogprobs | null)[] = [null];
  for (let t = 0; t < scores.logprobs.length; t++) {
    const row: TopkTokenLogprobs = [];
    for (let j = 0; j < top.k; j++) row.push([top.ids[t * top.k + j], float32Digits(top.logprobs[t * top.k + j])]);
    rows.push(row);
  }
  return rows;
}

/**
 * A logprob with the 9 significant digits that pin down a float32 (what Tinker's protobuf
 * carries, and the engine computes in): its JSON is about 13 characters instead of 20, so a
 * larger result fits in one NATS message.
 */
function float32Digits(value: number): number {
  return Number(value.toPrecision(9));
}
