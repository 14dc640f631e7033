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
 * The whole loss is built on the device. Comparisons have no gradient in tfjs, so every
 * stop-gradient factor and data-dependent mask is computed from `seen`, a second tensor holding
 * the same log-probs as constants; the gradient flows only through `logprobs`. Nothing is read
 * back while the loss is built: its value and metrics are scalars the caller reads later.
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
  /** The same log-probs as a constant (no gradient flows through it), for masks and stop-gradient factors. */
  seen: tf.Tensor2D;
  /** Old log-probs; NaN where unknown (then the current value, stop-gradient, is used). */
  oldLogprobs: Float32Array;
  advantages: Float32Array;
  mask: Float32Array;
  weights: Float32Array;
  /** Reference log-probs for the KL penalty and the kl_div metric. */
  refLogprobs?: Float32Array | null;
  /** Sampling log-probs when oldLogprobs were precalculated by the trainer (NaN unknown). */
  originalLogprobs?: Float32Array | null;
  /** Per-token entropy of the current policy [rows, T], a constant, for the metric only. */
  entropy?: tf.Tensor2D | null;
}

export interface RLLossResult {
  /** Scalar, differentiable. */
  loss: tf.Scalar;
  /** Metrics, scalars with no gradient; present where their inputs were given. */
  metrics: { entropy?: tf.Scalar; kl_div?: tf.Scalar; kl_policy_ref?: tf.Scalar };
}

export function rlPolicyLoss(inputs: RLLossInputs, options: RLLossOptions): RLLossResult {
  const { logprobs, seen } = inputs;
  const [rows, T] = logprobs.shape;
  const shape: [number, number] = [rows, T];
  const n = rows * T;
  for (const [name, arr] of Object.entries({ oldLogprobs: inputs.oldLogprobs, advantages: inputs.advantages, mask: inputs.mask, weights: inputs.weights })) {
    if (arr.length !== n) throw new Error(`${name} has ${arr.length} values for [${shape}]`);
  }
  const mask = tf.tensor2d(inputs.mask, shape);
  const denominator = inputs.mask.reduce((a, b) => a + b, 0) + 1e-6;
  const meanOver = (perToken: tf.Tensor) => tf.div(tf.sum(perToken), denominator) as tf.Scalar;
  // A known value where there is one, else the current log-prob (a constant).
  const filled = (values: Float32Array) => {
    const unknown = values.map((v) => (Number.isNaN(v) ? 1 : 0));
    return tf.add(tf.tensor2d(values.map((v) => (Number.isNaN(v) ? 0 : v)), shape), tf.mul(tf.tensor2d(unknown, shape), seen));
  };
  const old = filled(inputs.oldLogprobs);

  const lo = 1 - options.epsilon;
  const hi = 1 + options.epsilonHigh;
  /** The importance ratio of every token from log-probs `current`, by the options' level and cap. */
  const ratioOf = (current: tf.Tensor) => {
    const diff = tf.sub(current, old);
    let ratio: tf.Tensor = tf.exp(diff);
    if (options.importanceSamplingLevel !== 'token') {
      const rowMean = tf.div(tf.sum(tf.mul(diff, mask), 1, true), tf.add(tf.sum(mask, 1, true), 1e-6));
      const sequence = tf.exp(rowMean);
      if (options.importanceSamplingLevel === 'sequence') ratio = tf.mul(sequence, tf.onesLike(ratio));
      else if (options.importanceSamplingLevel === 'average') ratio = tf.div(tf.add(ratio, sequence), 2);
      else ratio = tf.mul(tf.sqrt(ratio), tf.sqrt(sequence));
    }
    if (options.maxNegativeAdvantageImportanceSamplingWeight !== null) ratio = tf.minimum(ratio, options.maxNegativeAdvantageImportanceSamplingWeight);
    return ratio;
  };
  let ratio = ratioOf(logprobs);
  // The same ratio as a constant, for the masks and stop-gradient factors built from it.
  let ratios = ratioOf(seen);
  if (options.maskProbRatio) {
    const keep = tf.cast(tf.logicalAnd(tf.greater(ratios, lo), tf.less(ratios, hi)), 'float32');
    ratio = tf.mul(ratio, keep);
    ratios = tf.mul(ratios, keep);
  }

  let advantages: tf.Tensor = tf.tensor2d(inputs.advantages, shape);
  if (options.kimiK2Tau !== null) advantages = tf.sub(advantages, tf.mul(tf.sub(seen, old), options.kimiK2Tau));
  const metrics: RLLossResult['metrics'] = {};
  const ref = inputs.refLogprobs ? tf.tensor2d(inputs.refLogprobs, shape) : null;
  if (options.klPenaltyCoef > 0 && ref) {
    const d = tf.mul(tf.sub(options.klPenaltySource === 'sample' ? old : seen, ref), mask);
    const klPolicyRef = meanOver(d);
    metrics.kl_policy_ref = klPolicyRef;
    advantages = tf.add(advantages, tf.mul(tf.mul(tf.sub(klPolicyRef, d), mask), options.klPenaltyCoef));
  }

  let perToken: tf.Tensor;
  if (options.lossFn === 'ppo') {
    perToken = tf.neg(tf.minimum(tf.mul(ratio, advantages), tf.mul(tf.clipByValue(ratio, lo, hi), advantages)));
  } else {
    perToken = tf.neg(tf.mul(tf.mul(tf.clipByValue(ratios, lo, hi), advantages), logprobs));
  }
  if (options.truncatedImportanceSampling !== null) {
    const r = inputs.originalLogprobs ? tf.exp(tf.sub(old, filled(inputs.originalLogprobs))) : ratios;
    perToken = tf.mul(perToken, tf.minimum(r, options.truncatedImportanceSampling));
  }
  const weighted = tf.mul(tf.tensor2d(inputs.weights, shape), mask);
  const loss = meanOver(tf.mul(perToken, weighted));

  if (ref) {
    const x = tf.sub(ref, seen);
    metrics.kl_div = meanOver(tf.mul(tf.sub(tf.sub(tf.exp(x), x), 1), weighted));
  }
  if (inputs.entropy) metrics.entropy = meanOver(tf.mul(inputs.entropy, weighted));
  return { loss, metrics };
}
