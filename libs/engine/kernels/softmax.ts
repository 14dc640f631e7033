// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/softmax.wasm.ts (generated, committed). Unlike the other kernels
// it runs on a memory of its own, not on tfjs's heap: the sampler works on logits already
// read back into JavaScript, and copies one row in before each call.
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
