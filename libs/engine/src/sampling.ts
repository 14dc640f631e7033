import { exponentials } from './kernels/softmax';
import { SeededRandom } from './random';

/**
 * Turning one position's logits into a token, on a Float32Array, separate from the model:
 * the decode loop owns the model, the sampler owns randomness and filtering. The
 * exponentials over the vocabulary are computed by a small WebAssembly kernel
 * (kernels/softmax.ts); the rest is plain JavaScript.
 */

/**
 * Edits logits in place before sampling, e.g. sets -Infinity on tokens a grammar forbids.
 * Receives the tokens generated so far in this sequence.
 */
export type LogitsProcessor = (logits: Float32Array, generated: readonly number[]) => void;

/**
 * Whether the logits processor would leave `id` allowed, when that can be told without
 * processing the whole vocabulary; false when it is not allowed or cannot be told cheaply.
 * Receives the tokens generated so far, as the processor does.
 */
export type QuickCheck = (id: number, generated: readonly number[]) => boolean;

export interface SamplingParams {
  /** 0 is greedy. Default 1. */
  temperature?: number;
  /** Nucleus: the smallest set of tokens holding this much probability. Default 1 (off); 0 is greedy, as OpenAI and vLLM read it. */
  topP?: number;
  /** Only the k most likely tokens. Default 0 (off). */
  topK?: number;
  /** Same seed, same backend, same logits: same tokens. */
  seed?: number;
  /**
   * Whether SampledToken.logprob is wanted. Default true. Without it, the sampler skips the
   * work it needs (a log-sum-exp over the vocabulary), logprob is NaN and no alternatives
   * are reported, and a logits processor with a quickCheck is often not run at all.
   */
  logprobs?: boolean;
  /** How many alternatives to report with each token. Default 0. */
  topLogprobs?: number;
  logitsProcessor?: LogitsProcessor;
  /**
   * A cheap test of one token against the logits processor (JSON mode's grammar, away from
   * the end of its budget). Without logprobs, or with only the model's own (modelLogprobs),
   * the token is first drawn from the logits as they are, and kept if the check allows it;
   * only otherwise is the processor run and the token drawn again from what it leaves
   * (drawsBeforeProcessing). The result has the processor's distribution: with p the
   * distribution before it and A the tokens it allows, x in A comes out with probability
   * p(x) + (1 - p(A)) p(x) / p(A) = p(x) / p(A). Its logprob under that distribution would
   * need p(A), hence not with those logprobs; and not with top-k or top-p when sampling, whose
   * cut depends on A.
   */
  quickCheck?: QuickCheck;
  /**
   * Whether quickCheck may allow some token after `generated`: false where it refuses every
   * token (JSON mode's grammar near the end of its budget), so that a caller that draws before
   * processing where the logits are (SequenceGenerator.drawsThenChecks) asks for the logits
   * with the step instead of drawing a token the check is sure to refuse. Default: it may.
   */
  quickCheckApplies?: (generated: readonly number[]) => boolean;
  /**
   * Report the model's own logprobs, before the logits processor restricts the choice (under
   * temperature, without top-k or top-p), as vLLM's raw logprobs are: what an RL trainer
   * scoring the model's distribution compares them with. Default false: the logprobs of the
   * distribution the token was drawn from.
   */
  modelLogprobs?: boolean;
}

export interface TokenLogprob {
  id: number;
  logprob: number;
}

export interface SampledToken {
  id: number;
  /**
   * Log-probability under the distribution the token was drawn from: after the logits
   * processor, temperature, top-k and top-p (with params.modelLogprobs: the model's, before the
   * processor). For greedy decoding (a point mass) it is the log-softmax of the processed
   * logits. NaN when params.logprobs is false.
   */
  logprob: number;
  /** The most likely alternatives under the same distribution as `logprob`, best first. */
  topLogprobs: TokenLogprob[];
}

export function createRng(seed?: number): SeededRandom {
  return new SeededRandom(seed ?? Math.floor(Math.random() * 2 ** 32));
}

export function sampleToken(
  logits: Float32Array,
  params: SamplingParams,
  rng: SeededRandom,
  generated: readonly number[] = [],
): SampledToken {
  if (drawsBeforeProcessing(params)) {
    const id = draw(logits, params, rng).id;
    if (params.quickCheck?.(id, generated)) return { id, logprob: (params.logprobs ?? true) ? modelLogprobs(logits, params)(id) : NaN, topLogprobs: [] };
  }
  return sampleProcessed(logits, params, rng, generated);
}

/**
 * Whether sampleToken first draws from the logits as they are and keeps the token where the
 * quick check allows it (SamplingParams.quickCheck): with a logits processor and a quick
 * check, without top-k or top-p (whose cut depends on what the processor allows), and with no
 * logprob wanted but the model's own (modelLogprobs, without alternatives), which the draw
 * gives; a logprob under the processor's distribution would need the mass it allows. Such a
 * first draw can be made where the logits are (DecodeBatch.stepMixed), the logits read back
 * only where the check refuses it (sampleProcessed).
 */
export function drawsBeforeProcessing(params: SamplingParams): boolean {
  const modelOnly = (params.logprobs ?? true) === false || (params.modelLogprobs === true && (params.topLogprobs ?? 0) <= 0);
  return params.logitsProcessor !== undefined && params.quickCheck !== undefined && !truncates(params) && modelOnly;
}

/**
 * sampleToken without its first, quick draw (drawsBeforeProcessing): the logits processor
 * run over the whole row, and the token drawn from what it leaves.
 */
export function sampleProcessed(logits: Float32Array, params: SamplingParams, rng: SeededRandom, generated: readonly number[]): SampledToken {
  const wantLogprobs = params.logprobs ?? true;
  const processed = params.logitsProcessor ? Float32Array.from(logits) : logits;
  params.logitsProcessor?.(processed, generated);
  const { id, probs, total } = draw(processed, params, rng);
  if (!wantLogprobs) return { id, logprob: NaN, topLogprobs: [] };
  const nTop = Math.max(0, params.topLogprobs ?? 0);

  if (params.modelLogprobs && params.logitsProcessor) {
    // `logits` is untouched: the processor worked on its copy.
    const logprob = modelLogprobs(logits, params);
    return { id, logprob: logprob(id), topLogprobs: topN(logits, nTop).map((i) => ({ id: i, logprob: logprob(i) })) };
  }

  if (!probs) {
    const lse = logSumExp(processed, 1);
    return {
      id,
      logprob: processed[id] - lse,
      topLogprobs: topN(processed, nTop).map((i) => ({ id: i, logprob: processed[i] - lse })),
    };
  }
  const logTotal = Math.log(total);
  return {
    id,
    logprob: Math.log(probs[id]) - logTotal,
    topLogprobs: topN(probs, nTop)
      .filter((i) => probs[i] > 0)
      .map((i) => ({ id: i, logprob: Math.log(probs[i]) - logTotal })),
  };
}

/** The model's own log-probabilities under the temperature (1 when greedy), before any processor: one log-sum-exp over the row, then each token's. */
function modelLogprobs(logits: Float32Array, params: SamplingParams): (id: number) => number {
  const temperature = isGreedy(params) ? 1 : (params.temperature ?? 1);
  const lse = logSumExp(logits, temperature);
  return (id) => logits[id] / temperature - lse;
}

/**
 * Whether top-k or top-p cut the distribution (when sampling): which tokens they keep depends
 * on which the processor allows, so a draw before the processor is not one from after it.
 */
function truncates(params: SamplingParams): boolean {
  if (isGreedy(params)) return false;
  const topK = params.topK ?? 0;
  return topK > 0 || (params.topP ?? 1) < 1;
}

/**
 * One token from the logits under temperature, top-k and top-p: the argmax when greedy (no
 * probabilities then), else a draw, with the weights it was drawn from (unnormalised, filtered
 * ones zeroed; a view that the next draw overwrites) and their total.
 */
function draw(logits: Float32Array, params: SamplingParams, rng: SeededRandom): { id: number; probs: Float32Array | null; total: number } {
  const temperature = params.temperature ?? 1;
  if (isGreedy(params)) {
    const id = argmax(logits);
    if (logits[id] === -Infinity) throw new Error('every token is masked');
    return { id, probs: null, total: 0 };
  }

  // Work in weights of the tempered distribution, exp((logit - max) / T), zeroing what the filters remove.
  const { values: probs, max, sum } = exponentials(logits, temperature);
  if (max === -Infinity) throw new Error('every token is masked');
  let total = sum;
  const V = probs.length;
  const topK = params.topK ?? 0;
  if (topK > 0 && topK < V) total = keepTopK(probs, topK);
  const topP = params.topP ?? 1;
  if (topP < 1) total = keepNucleus(probs, total, topP);

  let u = rng.next() * total;
  let id = -1;
  for (let i = 0; i < V; i++) {
    if (probs[i] === 0) continue;
    id = i;
    u -= probs[i];
    if (u < 0) break;
  }
  return { id, probs, total };
}

/** Temperature 0, or a nucleus of no mass (the most likely token alone). */
export function isGreedy(params: SamplingParams): boolean {
  return (params.temperature ?? 1) <= 0 || (params.topP ?? 1) <= 0;
}

/** Zeroes all but the k largest (ties at the boundary broken by lower id); returns the new total. */
function keepTopK(probs: Float32Array, k: number): number {
  const order = topN(probs, k);
  const keep = new Uint8Array(probs.length);
  for (const i of order) keep[i] = 1;
  let total = 0;
  for (let i = 0; i < probs.length; i++) {
    if (keep[i]) total += probs[i];
    else probs[i] = 0;
  }
  return total;
}

/**
 * Bucket of a weight for the nucleus: the top 16 bits of its float32 (sign, exponent and 7
 * bits of mantissa), which order non-negative floats as their values do. Weights are at most
 * 1 (exp of a logit minus the largest), whose key is 0x3f80.
 */
const NUCLEUS_KEYS = 0x3f81;
const bucketMass = new Float64Array(NUCLEUS_KEYS);

/**
 * Keeps the smallest set of most likely tokens whose mass reaches p (among equal weights,
 * lower ids first); zeroes the rest and returns the mass kept. Without sorting the
 * vocabulary: the weights' mass is summed per bucket of nearly equal weights (above), the
 * buckets are taken from the top while they stay short of p, and only the tokens of the
 * bucket where p is reached are sorted. One pass to bucket, one to cut: at a 49152-token
 * vocabulary a sort of every token above a floor took 2-4 ms per row.
 */
function keepNucleus(probs: Float32Array, total: number, p: number): number {
  const keys = new Uint32Array(probs.buffer, probs.byteOffset, probs.length);
  bucketMass.fill(0);
  for (let i = 0; i < probs.length; i++) bucketMass[keys[i] >>> 16] += probs[i];
  const target = p * total;
  let kept = 0;
  let boundary = NUCLEUS_KEYS - 1;
  for (; boundary > 0 && kept + bucketMass[boundary] < target; boundary--) kept += bucketMass[boundary];
  const ties: number[] = [];
  for (let i = 0; i < probs.length; i++) {
    const key = keys[i] >>> 16;
    if (key > boundary || probs[i] === 0) continue;
    if (key === boundary) ties.push(i);
    else probs[i] = 0;
  }
  ties.sort((a, b) => probs[b] - probs[a] || a - b);
  for (const i of ties) {
    if (kept >= target) probs[i] = 0;
    else kept += probs[i];
  }
  return kept;
}

/** Indices of the n largest values, largest first, lower index first among equals. */
export function topN(values: ArrayLike<number>, n: number): number[] {
  if (n <= 0) return [];
  const best: number[] = [];
  // The smallest value kept so far once n are kept: most values fall below it and cost one comparison.
  let floor = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (best.length === n && !(v > floor)) continue;
    let j = Math.min(best.length, n - 1);
    if (best.length < n) best.push(i);
    while (j > 0 && v > values[best[j - 1]]) {
      best[j] = best[j - 1];
      j--;
    }
    best[j] = i;
    if (best.length === n) floor = values[best[n - 1]];
  }
  return best;
}

export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

function logSumExp(values: Float32Array, temperature: number): number {
  const { max, sum } = exponentials(values, temperature);
  return max === -Infinity ? -Infinity : max / temperature + Math.log(sum);
}
