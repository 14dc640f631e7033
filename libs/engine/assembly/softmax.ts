// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/softmax.wasm.ts (generated at build). The sampler runs it on a
// memory of its own: it works on logits already read back into JavaScript, and copies one row
// in before each call. A training step runs nextTokenSoftmax and nextTokenGradient on tfjs's
// heap (src/kernels/next-token-softmax.ts), on the lm_head's logits where tfjs keeps them.
//
// Sampling a token needs, for one row of logits x over the vocabulary, the exponentials
// e_i = exp((x_i - m) / T), with m the largest logit and T the temperature, and their sum:
// the draw is made from the e_i, and a token's logprob is (x_i - m) / T - log(sum). Done in
// JavaScript, Math.exp costs about 14 ns a call: 0.7 ms per row and step for a 49152-token
// vocabulary, as much as a fifth of a one-row decode step. Here four at a time, with the
// polynomial exp of shared/exp.ts.

import { expf, expf4, maxOf } from './shared/exp';

/** The largest of x[0..n) (-Infinity when every one is -Infinity). */
export function largest(x: usize, n: i32): f32 {
  return maxOf(x, n);
}

/**
 * x_i <- exp((x_i - m) * scale) for i < n, in place; returns the sum of the results. With m
 * the largest x_i and scale = 1 / T every result is in [0, 1], and -Infinity (a token a
 * grammar forbids) gives 0. The sum is kept in float64: 49152 float32 terms summed in float32
 * could lose about 1e-4 of it, which would show in every logprob.
 */
export function exponentiate(x: usize, n: i32, m: f32, scale: f32): f64 {
  const mm = f32x4.splat(m);
  const ss = f32x4.splat(scale);
  let low = f64x2.splat(0);
  let high = f64x2.splat(0);
  const bytes = (<usize>n) << 2;
  let at: usize = 0;
  for (; at + 16 <= bytes; at += 16) {
    const e = expf4(f32x4.mul(f32x4.sub(v128.load(x + at), mm), ss));
    v128.store(x + at, e);
    low = f64x2.add(low, f64x2.promote_low_f32x4(e));
    high = f64x2.add(high, f64x2.promote_low_f32x4(v128.shuffle<f32>(e, e, 2, 3, 0, 1)));
  }
  const both = f64x2.add(low, high);
  let sum = f64x2.extract_lane(both, 0) + f64x2.extract_lane(both, 1);
  for (; at < bytes; at += 4) {
    const e = expf((load<f32>(x + at) - m) * scale);
    store<f32>(x + at, e);
    sum += <f64>e;
  }
  return sum;
}

/**
 * The lm_head's softmax for a training step, in one pass of exponentials per row. For each row
 * r < n of logits [n, V] with target t = targets[r] (int32) and z_j = x_j - max_j x_j:
 *   exps[r][j] = e^z_j   (in (0, 1]; 0 for -Infinity)
 *   stats[r]   = (z_t, s, sum_j e^z_j z_j / s)   with s = sum_j e^z_j
 * from which log p(t) = z_t - log s and the entropy H = log s - sum_j p_j z_j (the caller takes
 * the logarithms: no table-driven log here). Sums are kept in float64, as in exponentiate.
 * Where tfjs takes a max, a subtraction, exp, a sum, a division, a gather and, for the
 * entropy, a product and a sum, each a pass over [n, V].
 */
export function nextTokenSoftmax(logits: usize, targets: usize, exps: usize, stats: usize, n: i32, V: i32): void {
  const rowBytes = (<usize>V) << 2;
  for (let r = 0; r < n; r++) {
    const x = logits + <usize>r * rowBytes;
    const e = exps + <usize>r * rowBytes;
    const m = maxOf(x, V);
    const mm = f32x4.splat(m);
    let sumLow = f64x2.splat(0);
    let sumHigh = f64x2.splat(0);
    let ezLow = f64x2.splat(0);
    let ezHigh = f64x2.splat(0);
    let at: usize = 0;
    for (; at + 16 <= rowBytes; at += 16) {
      const z = f32x4.sub(v128.load(x + at), mm);
      const p = expf4(z);
      v128.store(e + at, p);
      // -Infinity logits have p = 0: their z p is 0, not NaN.
      const pz = v128.andnot(f32x4.mul(p, z), f32x4.eq(p, f32x4.splat(0)));
      sumLow = f64x2.add(sumLow, f64x2.promote_low_f32x4(p));
      sumHigh = f64x2.add(sumHigh, f64x2.promote_low_f32x4(v128.shuffle<f32>(p, p, 2, 3, 0, 1)));
      ezLow = f64x2.add(ezLow, f64x2.promote_low_f32x4(pz));
      ezHigh = f64x2.add(ezHigh, f64x2.promote_low_f32x4(v128.shuffle<f32>(pz, pz, 2, 3, 0, 1)));
    }
    const sums = f64x2.add(sumLow, sumHigh);
    const ezs = f64x2.add(ezLow, ezHigh);
    let sum = f64x2.extract_lane(sums, 0) + f64x2.extract_lane(sums, 1);
    let ez = f64x2.extract_lane(ezs, 0) + f64x2.extract_lane(ezs, 1);
    for (; at < rowBytes; at += 4) {
      const z = load<f32>(x + at) - m;
      const p = expf(z);
      store<f32>(e + at, p);
      sum += <f64>p;
      if (p != 0) ez += <f64>(p * z);
    }
    const target = load<i32>(targets + ((<usize>r) << 2));
    const out = stats + <usize>r * 12;
    store<f32>(out, load<f32>(x + ((<usize>target) << 2)) - m);
    store<f32>(out + 4, <f32>sum);
    store<f32>(out + 8, <f32>(ez / sum));
  }
}

/**
 * d loss / d logits from nextTokenSoftmax's exps and stats and dLogprobs [n] = d loss / d log
 * p(t) per row: d log p(t) / d x_j = [j = t] - p_j, so
 *   dLogits[r][j] = dLogprobs[r] ([j = t] - exps[r][j] / s_r),
 * one pass where tfjs takes a one-hot, a subtraction and a product.
 */
export function nextTokenGradient(exps: usize, stats: usize, targets: usize, dLogprobs: usize, dLogits: usize, n: i32, V: i32): void {
  const rowBytes = (<usize>V) << 2;
  for (let r = 0; r < n; r++) {
    const e = exps + <usize>r * rowBytes;
    const d = dLogits + <usize>r * rowBytes;
    const g = load<f32>(dLogprobs + ((<usize>r) << 2));
    const c = -g / load<f32>(stats + <usize>r * 12 + 4);
    const cc = f32x4.splat(c);
    let at: usize = 0;
    for (; at + 16 <= rowBytes; at += 16) v128.store(d + at, f32x4.mul(v128.load(e + at), cc));
    for (; at < rowBytes; at += 4) store<f32>(d + at, load<f32>(e + at) * c);
    const t = d + ((<usize>load<i32>(targets + ((<usize>r) << 2))) << 2);
    store<f32>(t, load<f32>(t) + g);
  }
}
