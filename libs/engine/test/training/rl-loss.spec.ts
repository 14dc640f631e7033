import * as tf from '@tensorflow/tfjs-core';
import { ensureTrainingGradients } from '../../src/training/gradients';
import { RLLossInputs, rlPolicyLoss } from '../../src/training/rl-loss';
import type { RLTrainingConfig } from '../../src/training/training-config';
import { useBackend } from '../helpers';
import { PPO, rlConfig } from './rl-config';

/**
 * One row of three tokens, all trainable, weights 1: every option's effect can be worked out
 * by hand. Current log-probs l = [-1, -2, -0.5], old [-1.5, -1, NaN (missing)].
 */
const L = [-1, -2, -0.5];
const OLD = [-1.5, -1, NaN];
const denom = 3 + 1e-6;

function run(changes: Partial<RLTrainingConfig>, extra: Partial<RLLossInputs> = {}, advantages = [1, 1, 1]) {
  const config = rlConfig(changes);
  const lp = tf.variable(tf.tensor2d(L, [1, 3]));
  const seen = tf.tensor2d(L, [1, 3]);
  let metrics: Record<string, number> = {};
  const { value, grads } = tf.variableGrads(() => {
    const result = rlPolicyLoss(
      { logprobs: lp as unknown as tf.Tensor2D, seen, oldLogprobs: new Float32Array(OLD), advantages: new Float32Array(advantages), mask: new Float32Array([1, 1, 1]), weights: new Float32Array([1, 1, 1]), ...extra },
      config,
    );
    metrics = Object.fromEntries(Object.entries(result.metrics).map(([name, m]) => [name, m.dataSync()[0]]));
    return result.loss;
  }, [lp]);
  const out = { loss: value.dataSync()[0], grad: Array.from(grads[lp.name].dataSync()), metrics };
  tf.dispose([lp, seen, value, ...Object.values(grads)]);
  return out;
}

describe('RL losses on a hand-checkable example', () => {
  beforeAll(async () => {
    await useBackend('wasm');
    ensureTrainingGradients();
  });

  const r = [Math.exp(0.5), Math.exp(-1), 1]; // token ratios; the missing old logprob gives 1

  it('cispo (default): - clip(sg(ratio), 1-1, 1+4) * A * l, gradient -clip(ratio) * A', () => {
    const { loss, grad } = run({});
    expect(loss).toBeCloseTo(-(r[0] * -1 + r[1] * -2 + 1 * -0.5) / denom, 5);
    grad.forEach((g, i) => expect(g).toBeCloseTo(-r[i] / denom, 5));
  });

  it('cispo epsilon_high clips the stop-gradient ratio from above', () => {
    const { loss } = run({ epsilonHigh: 0.2 });
    expect(loss).toBeCloseTo(-(1.2 * -1 + r[1] * -2 + 1 * -0.5) / denom, 5);
  });

  it('ppo: - min(ratio A, clip(ratio, 0.8, 1.2) A), gradient only where unclipped', () => {
    const { loss, grad } = run(PPO);
    expect(loss).toBeCloseTo(-(1.2 + r[1] * 1 + 1) / denom, 5);
    // token 0 clipped (no gradient), token 1 below the range with A > 0: min picks ratio A (gradient ratio).
    expect(grad[0]).toBeCloseTo(0, 6);
    expect(grad[1]).toBeCloseTo(-r[1] / denom, 5);
    expect(grad[2]).toBeCloseTo(-1 / denom, 5);
  });

  it('ppo with a negative advantage takes the pessimistic side', () => {
    const { loss } = run(PPO, {}, [-1, -1, -1]);
    // -min(-r, -clip(r)) = max(r, clip(r)): [r0, 0.8, 1]
    expect(loss).toBeCloseTo((r[0] + 0.8 + 1) / denom, 5);
  });

  it('importance_sampling_level sequence / average / geometric_average', () => {
    const seq = Math.exp((0.5 - 1 + 0) / 3);
    expect(run({ importanceSamplingLevel: 'sequence' }).loss).toBeCloseTo(-(seq * (-1 - 2 - 0.5)) / denom, 5);
    const avg = r.map((x) => (x + seq) / 2);
    expect(run({ importanceSamplingLevel: 'average' }).loss).toBeCloseTo(-(avg[0] * -1 + avg[1] * -2 + avg[2] * -0.5) / denom, 5);
    const geo = r.map((x) => Math.sqrt(x * seq));
    expect(run({ importanceSamplingLevel: 'geometric_average' }).loss).toBeCloseTo(-(geo[0] * -1 + geo[1] * -2 + geo[2] * -0.5) / denom, 5);
  });

  it('max_negative_advantage_importance_sampling_weight caps the ratio', () => {
    expect(run({ maxNegativeAdvantageImportanceSamplingWeight: 1.1 }).loss).toBeCloseTo(-(1.1 * -1 + r[1] * -2 + 1 * -0.5) / denom, 5);
  });

  it('mask_prob_ratio zeroes ratios outside (1-eps, 1+eps_high)', () => {
    // ppo, eps 0.2: token 0 (1.65) and token 1 (0.37) are outside, so only token 2 remains.
    expect(run({ ...PPO, maskProbRatio: true }).loss).toBeCloseTo(-(0 + 0 + 1) / denom, 5);
  });

  it('kimi_k2_tau subtracts tau * (l - l_old) from the advantage', () => {
    const tau = 0.5;
    const adv = [1 - tau * 0.5, 1 - tau * -1, 1];
    expect(run({ kimiK2Tau: tau }).loss).toBeCloseTo(-(r[0] * adv[0] * -1 + r[1] * adv[1] * -2 + adv[2] * -0.5) / denom, 5);
  });

  it('kl_penalty_coef adds c * (mean(d) - d) with d = l - l_ref, and reports kl_policy_ref and kl_div', () => {
    const ref = [-1, -1, -1];
    const d = L.map((x, i) => x - ref[i]); // [0, -1, 0.5]
    const mean = (0 - 1 + 0.5) / denom;
    const c = 0.1;
    const adv = d.map((x) => 1 + c * (mean - x));
    const { loss, metrics } = run({ klPenaltyCoef: c }, { refLogprobs: new Float32Array(ref) });
    expect(loss).toBeCloseTo(-(r[0] * adv[0] * -1 + r[1] * adv[1] * -2 + adv[2] * -0.5) / denom, 5);
    expect(metrics.kl_policy_ref).toBeCloseTo(mean, 5);
    const k3 = d.map((x) => Math.exp(-x) + x - 1);
    expect(metrics.kl_div).toBeCloseTo((k3[0] + k3[1] + k3[2]) / denom, 5);
    // source "sample" measures d from the sampling logprobs (the missing one falls back to l).
    const ds = [-1.5 + 1, -1 + 1, -0.5 + 1];
    const means = (ds[0] + ds[1] + ds[2]) / denom;
    const advs = ds.map((x) => 1 + c * (means - x));
    expect(run({ klPenaltyCoef: c, klPenaltySource: 'sample' }, { refLogprobs: new Float32Array(ref) }).loss).toBeCloseTo(
      -(r[0] * advs[0] * -1 + r[1] * advs[1] * -2 + advs[2] * -0.5) / denom,
      5,
    );
  });

  it('truncated_importance_sampling multiplies by min(ratio, cap), or by exp(l_old - l_original) when precalculated', () => {
    const cap = 1.2;
    const base = [r[0] * -1, r[1] * -2, -0.5];
    expect(run({ truncatedImportanceSampling: cap }).loss).toBeCloseTo(-(base[0] * cap + base[1] * r[1] + base[2]) / denom, 5);
    const original = new Float32Array([-1.5, -3, NaN]);
    const t = [1, Math.min(Math.exp(-1 + 3), cap), 1];
    expect(run({ truncatedImportanceSampling: cap }, { originalLogprobs: original }).loss).toBeCloseTo(-(base[0] * t[0] + base[1] * t[1] + base[2] * t[2]) / denom, 5);
  });

  it('weights and the mask scale each token; padding counts for nothing', () => {
    const entropy = tf.tensor2d([0.5, 2, 7], [1, 3]);
    const { loss, metrics } = run({}, { weights: new Float32Array([2, 1, 0]), mask: new Float32Array([1, 1, 0]), entropy });
    entropy.dispose();
    expect(loss).toBeCloseTo(-(2 * r[0] * -1 + r[1] * -2) / (2 + 1e-6), 5);
    expect(metrics.entropy).toBeCloseTo((2 * 0.5 + 2) / (2 + 1e-6), 5);
  });
});
