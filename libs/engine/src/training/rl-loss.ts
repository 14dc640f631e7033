import * as tf from '@tensorflow/tfjs-core';

/**
 * The RL policy losses of the reference trainer (ART), token by token. Everything is laid out
 * [rows, T]: one row per trajectory history, right-padded, mask 0 on padding and on every
 * token that is not a sampled Choice token.
 *
 * With l the current log-probs (differentiable), l_old the sampling (or precalculated)
 * log-probs and A the advantages:
 *   ratio  = exp(l - l_old)                          importance_sampling_level "token"
 *          = exp(mean over the row of (l - l_old))     "sequence"
 *          = (token + sequence) / 2                     "average"
 *          = sqrt(token) * sqrt(sequence)               "geometric_average"
 *   ratio  = min(ratio, max_negative_advantage_importance_sampling_weight)   when set
 *   ratio  = ratio where 1-eps < ratio < 1+eps_high, else 0                  mask_prob_ratio
 *   A      = A - tau * stopgrad(l - l_old)                                   kimi_k2_tau
 *   A      = A + c * (mean(d) - d), d = stopgrad(l_src - l_ref)              KL penalty
 *   cispo: L = - clip(stopgrad(ratio), 1-eps, 1+eps_high) * A * l
 *   ppo:   L = - min(ratio * A, clip(ratio, 1-eps, 1+eps_high) * A)
 *   L      = L * stopgrad(min(r_t, truncated_importance_sampling))           when set, with
 *            r_t = exp(l_old - l_original) when the old log-probs were precalculated, else ratio
 *   loss   = sum(L * w * m) / (sum(m) + 1e-6)
 * Comparisons have no gradient in tfjs, so every data-dependent mask is computed from the
 * values of l (stopgrad), which the caller passes as numbers, and applied as a constant
 * multiplier: nothing is read back from the device while the loss is built.
 */

export type ImportanceSamplingLevel = 'token' | 'sequence' | 'average' | 'geometric_average';

export interface RLLossOptions {
  lossFn: 'cispo' | 'ppo';
  epsilon: number;
  epsilonHigh: number;
  importanceSamplingLevel: ImportanceSamplingLevel;
  maxNegativeAdvantageImportanceSamplingWeight: number | null;
  maskProbRatio: boolean;
  kimiK2Tau: number | null;
  klPenaltyCoef: number;
  klPenaltySource: 'current_learner' | 'sample';
  truncatedImportanceSampling: number | null;
}

export interface RLLossInputs {
  /** Current log-probs [rows, T] (differentiable). */
  logprobs: tf.Tensor2D;
  /** The same log-probs as numbers, row-major. */
  logprobValues: Float32Array;
  /** Old log-probs; NaN where unknown (then the current value, stop-gradient, is used). */
  oldLogprobs: Float32Array;
  advantages: Float32Array;
  mask: Float32Array;
  weights: Float32Array;
  /** Reference log-probs for the KL penalty and the kl_div metric. */
  refLogprobs?: Float32Array | null;
  /** Sampling log-probs when oldLogprobs were precalculated by the trainer (NaN unknown). */
  originalLogprobs?: Float32Array | null;
  /** Per-token entropy of the current policy, for the metric only. */
  entropy?: Float32Array | null;
}

export interface RLLossResult {
  /** Scalar, differentiable. */
  loss: tf.Scalar;
  /** Metrics computed from values (no gradient). */
  entropy: number | null;
  klDiv: number | null;
  klPolicyRef: number | null;
}

/**
 * The importance ratio of every token as numbers: the tensor formula of rlPolicyLoss (level,
 * cap) on values, for the masks and stop-gradient factors that are built from it.
 */
function ratioValues(current: Float32Array, old: Float32Array, mask: Float32Array, rows: number, T: number, options: RLLossOptions): Float32Array {
  const out = new Float32Array(rows * T);
  for (let r = 0; r < rows; r++) {
    let diffSum = 0;
    let maskSum = 0;
    for (let t = 0; t < T; t++) {
      const i = r * T + t;
      diffSum += Math.fround(current[i] - old[i]) * mask[i];
      maskSum += mask[i];
    }
    const sequence = Math.exp(diffSum / (maskSum + 1e-6));
    for (let t = 0; t < T; t++) {
      const i = r * T + t;
      const token = Math.exp(Math.fround(current[i] - old[i]));
      let ratio = token;
      if (options.importanceSamplingLevel === 'sequence') ratio = sequence;
      else if (options.importanceSamplingLevel === 'average') ratio = (token + sequence) / 2;
      else if (options.importanceSamplingLevel === 'geometric_average') ratio = Math.sqrt(token) * Math.sqrt(sequence);
      if (options.maxNegativeAdvantageImportanceSamplingWeight !== null) ratio = Math.min(ratio, options.maxNegativeAdvantageImportanceSamplingWeight);
      out[i] = ratio;
    }
  }
  return out;
}

export function rlPolicyLoss(inputs: RLLossInputs, options: RLLossOptions): RLLossResult {
  const { logprobs } = inputs;
  const [rows, T] = logprobs.shape;
  const shape: [number, number] = [rows, T];
  const n = rows * T;
  for (const [name, arr] of Object.entries({ oldLogprobs: inputs.oldLogprobs, advantages: inputs.advantages, mask: inputs.mask, weights: inputs.weights })) {
    if (arr.length !== n) throw new Error(`${name} has ${arr.length} values for [${shape}]`);
  }
  if (inputs.logprobValues.length !== n) throw new Error(`logprobValues has ${inputs.logprobValues.length} values for [${shape}]`);
  const current = inputs.logprobValues;
  const fill = (src: Float32Array) => src.map((v, i) => (Number.isNaN(v) ? current[i] : v));
  const mask = tf.tensor2d(inputs.mask, shape);
  const maskSum = inputs.mask.reduce((a, b) => a + b, 0);
  const denominator = maskSum + 1e-6;
  const old = fill(inputs.oldLogprobs);

  const diff = tf.sub(logprobs, tf.tensor2d(old, shape));
  let ratio: tf.Tensor = tf.exp(diff);
  if (options.importanceSamplingLevel !== 'token') {
    const rowMean = tf.div(tf.sum(tf.mul(diff, mask), 1, true), tf.add(tf.sum(mask, 1, true), 1e-6));
    const sequence = tf.exp(rowMean);
    if (options.importanceSamplingLevel === 'sequence') ratio = tf.mul(sequence, tf.onesLike(ratio));
    else if (options.importanceSamplingLevel === 'average') ratio = tf.div(tf.add(ratio, sequence), 2);
    else ratio = tf.mul(tf.sqrt(ratio), tf.sqrt(sequence));
  }
  if (options.maxNegativeAdvantageImportanceSamplingWeight !== null) {
    ratio = tf.minimum(ratio, options.maxNegativeAdvantageImportanceSamplingWeight);
  }
  const lo = 1 - options.epsilon;
  const hi = 1 + options.epsilonHigh;
  const ratios = ratioValues(current, old, inputs.mask, rows, T, options);
  if (options.maskProbRatio) {
    const keep = ratios.map((r) => (r > lo && r < hi ? 1 : 0));
    ratio = tf.mul(ratio, tf.tensor2d(keep, shape));
    ratios.forEach((r, i) => (ratios[i] = r * keep[i]));
  }

  const advantages = new Float32Array(inputs.advantages);
  if (options.kimiK2Tau !== null) {
    for (let i = 0; i < n; i++) advantages[i] -= options.kimiK2Tau * (current[i] - old[i]);
  }
  let klPolicyRef: number | null = null;
  const ref = inputs.refLogprobs ?? null;
  if (options.klPenaltyCoef > 0 && ref) {
    const source = options.klPenaltySource === 'sample' ? old : current;
    const d = new Float32Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      d[i] = (source[i] - ref[i]) * inputs.mask[i];
      sum += d[i];
    }
    klPolicyRef = sum / denominator;
    for (let i = 0; i < n; i++) advantages[i] += options.klPenaltyCoef * (klPolicyRef - d[i]) * inputs.mask[i];
  }
  const adv = tf.tensor2d(advantages, shape);

  let perToken: tf.Tensor;
  if (options.lossFn === 'ppo') {
    perToken = tf.neg(tf.minimum(tf.mul(ratio, adv), tf.mul(tf.clipByValue(ratio, lo, hi), adv)));
  } else {
    perToken = tf.neg(tf.mul(tf.mul(tf.clipByValue(tf.tensor2d(ratios, shape), lo, hi), adv), logprobs));
  }
  if (options.truncatedImportanceSampling !== null) {
    const original = inputs.originalLogprobs ? fill(inputs.originalLogprobs) : null;
    const r = original ? old.map((v, i) => Math.exp(v - original[i])) : ratios;
    const cap = options.truncatedImportanceSampling;
    perToken = tf.mul(perToken, tf.tensor2d(r.map((v) => Math.min(v, cap)), shape));
  }
  const weighted = tf.mul(tf.tensor2d(inputs.weights, shape), mask);
  const loss = tf.div(tf.sum(tf.mul(perToken, weighted)), denominator) as tf.Scalar;

  let klDiv: number | null = null;
  if (ref) {
    let s = 0;
    for (let i = 0; i < n; i++) {
      const x = ref[i] - current[i];
      s += (Math.exp(x) - x - 1) * inputs.weights[i] * inputs.mask[i];
    }
    klDiv = s / denominator;
  }
  let entropy: number | null = null;
  if (inputs.entropy) {
    let s = 0;
    for (let i = 0; i < n; i++) s += inputs.entropy[i] * inputs.weights[i] * inputs.mask[i];
    entropy = s / denominator;
  }
  return { loss, entropy, klDiv, klPolicyRef };
}
