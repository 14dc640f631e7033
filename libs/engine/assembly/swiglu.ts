// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/swiglu.wasm.ts (generated at build) and runs it on tfjs-wasm's
// own memory, as the matmul kernel does. No static data: exp is shared/exp.ts's polynomial.
//
// The SwiGLU gate of the MLP, silu(gate) * up = gate * sigmoid(gate) * up, straight from the
// fused gate|up projection's output, in one call where tfjs runs four kernels (split,
// sigmoid, multiply, multiply): 30 per token on a 30-layer model. Each element is computed
// alone, so a sequence gets the same bits alone as in a batch. swigluBackward is its
// gradient, for training.

import { expf4 } from './shared/exp';

/**
 * out[r][i] = g * sigmoid(g) * u with g = gateUp[r][i], u = gateUp[r][F + i], for rows r < M
 * of gateUp [M, 2F] and out [M, F] (F a multiple of 4). sigmoid(g) is 1 / (1 + e) for g >= 0
 * and e / (1 + e) below, with e = exp(-|g|) <= 1: no overflow either way.
 */
export function swiglu(gateUp: usize, out: usize, M: i32, F: i32): void {
  const half = (<usize>F) << 2;
  const one = f32x4.splat(1);
  for (let r = 0; r < M; r++) {
    const gates = gateUp + <usize>r * 2 * half;
    const dst = out + <usize>r * half;
    for (let at: usize = 0; at < half; at += 16) {
      const g = v128.load(gates + at);
      const e = expf4(f32x4.neg(f32x4.abs(g)));
      const sigmoid = f32x4.div(v128.bitselect(one, e, f32x4.ge(g, f32x4.splat(0))), f32x4.add(one, e));
      v128.store(dst + at, f32x4.mul(f32x4.mul(g, sigmoid), v128.load(gates + half + at)));
    }
  }
}

/**
 * The gradient of swiglu with respect to gateUp, for a training step's backward pass: with
 * s = sigmoid(g), d/dg (g s) = s (1 + g (1 - s)), so
 *   dGateUp[r][i] = dy u s (1 + g (1 - s)),   dGateUp[r][F + i] = dy g s,
 * for gateUp and dGateUp [M, 2F] and dy [M, F] (F a multiple of 4).
 */
export function swigluBackward(gateUp: usize, dy: usize, dGateUp: usize, M: i32, F: i32): void {
  const half = (<usize>F) << 2;
  const one = f32x4.splat(1);
  for (let r = 0; r < M; r++) {
    const gates = gateUp + <usize>r * 2 * half;
    const grads = dGateUp + <usize>r * 2 * half;
    const d = dy + <usize>r * half;
    for (let at: usize = 0; at < half; at += 16) {
      const g = v128.load(gates + at);
      const u = v128.load(gates + half + at);
      const e = expf4(f32x4.neg(f32x4.abs(g)));
      const sigmoid = f32x4.div(v128.bitselect(one, e, f32x4.ge(g, f32x4.splat(0))), f32x4.add(one, e));
      const dOut = v128.load(d + at);
      const slope = f32x4.mul(sigmoid, f32x4.add(one, f32x4.mul(g, f32x4.sub(one, sigmoid))));
      v128.store(grads + at, f32x4.mul(f32x4.mul(dOut, u), slope));
      v128.store(grads + half + at, f32x4.mul(dOut, f32x4.mul(g, sigmoid)));
    }
  }
}
