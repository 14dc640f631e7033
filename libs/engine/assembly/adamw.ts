// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/adamw.wasm.ts (generated at build) and runs it on tfjs-wasm's
// own memory, as the matmul kernel does. No static data.
//
// The optimizer's step over a LoRA adapter's parameters (2.4 M numbers for r 8 on seven
// projections of a 30-layer model), where the tensors already are: no copy out of tfjs's heap
// and back. The arithmetic is in float64, in the order src/training/adamw.ts states it, and
// the moments are stored in float32, so the results are the bits of that file's JS loop.

/**
 * from + the sum of g[i]^2 for i < n, in float64, one element after the other: the order of a
 * JS loop that sums every tensor's squares into one total, when each call continues from the
 * total so far. The global gradient norm is the square root of that total.
 */
export function sumOfSquares(g: usize, n: i32, from: f64): f64 {
  let sum = from;
  const end = g + ((<usize>n) << 2);
  for (let at = g; at < end; at += 4) {
    const x = <f64>load<f32>(at);
    sum += x * x;
  }
  return sum;
}

/**
 * One AdamW step for n parameters p with gradients g and moments m and v (all float32),
 * writing pOut, mOut and vOut (each may be its input: every element is read before it is
 * written). With grad = g clip:
 *   m' = beta1 m + oneMinusBeta1 grad           v' = beta2 v + oneMinusBeta2 grad grad
 *   p' = p decay - lr (m' / correction1) / (sqrt(v' / correction2) + eps)
 * where m' and v' are rounded to float32 before p' reads them. Four elements per step, in two
 * float64x2 halves, then the last n % 4 one at a time.
 */
export function adamw(
  p: usize,
  g: usize,
  m: usize,
  v: usize,
  pOut: usize,
  mOut: usize,
  vOut: usize,
  n: i32,
  clip: f64,
  beta1: f64,
  oneMinusBeta1: f64,
  beta2: f64,
  oneMinusBeta2: f64,
  correction1: f64,
  correction2: f64,
  eps: f64,
  lr: f64,
  decay: f64,
): void {
  const bytes = (<usize>n) << 2;
  const whole = bytes & ~(<usize>15);
  for (let at: usize = 0; at < whole; at += 16) {
    const grads = v128.load(g + at);
    const first = v128.load(m + at);
    const second = v128.load(v + at);
    const params = v128.load(p + at);
    // The clipped gradients of elements 0-1 and 2-3, as both moments read them.
    const g0 = f64x2.mul(f64x2.promote_low_f32x4(grads), f64x2.splat(clip));
    const g1 = f64x2.mul(f64x2.promote_low_f32x4(v128.shuffle<i32>(grads, grads, 2, 3, 0, 1)), f64x2.splat(clip));
    const m0 = moment(f64x2.promote_low_f32x4(first), g0, beta1, oneMinusBeta1, false);
    const m1 = moment(f64x2.promote_low_f32x4(v128.shuffle<i32>(first, first, 2, 3, 0, 1)), g1, beta1, oneMinusBeta1, false);
    const v0 = moment(f64x2.promote_low_f32x4(second), g0, beta2, oneMinusBeta2, true);
    const v1 = moment(f64x2.promote_low_f32x4(v128.shuffle<i32>(second, second, 2, 3, 0, 1)), g1, beta2, oneMinusBeta2, true);
    // The moments as stored (float32), which the update reads back.
    const mNext = v128.shuffle<i32>(f32x4.demote_f64x2_zero(m0), f32x4.demote_f64x2_zero(m1), 0, 1, 4, 5);
    const vNext = v128.shuffle<i32>(f32x4.demote_f64x2_zero(v0), f32x4.demote_f64x2_zero(v1), 0, 1, 4, 5);
    const p0 = step(f64x2.promote_low_f32x4(params), f64x2.promote_low_f32x4(mNext), f64x2.promote_low_f32x4(vNext), correction1, correction2, eps, lr, decay);
    const p1 = step(
      f64x2.promote_low_f32x4(v128.shuffle<i32>(params, params, 2, 3, 0, 1)),
      f64x2.promote_low_f32x4(v128.shuffle<i32>(mNext, mNext, 2, 3, 0, 1)),
      f64x2.promote_low_f32x4(v128.shuffle<i32>(vNext, vNext, 2, 3, 0, 1)),
      correction1,
      correction2,
      eps,
      lr,
      decay,
    );
    v128.store(mOut + at, mNext);
    v128.store(vOut + at, vNext);
    v128.store(pOut + at, v128.shuffle<i32>(f32x4.demote_f64x2_zero(p0), f32x4.demote_f64x2_zero(p1), 0, 1, 4, 5));
  }
  for (let at = whole; at < bytes; at += 4) {
    const grad = <f64>load<f32>(g + at) * clip;
    const mNext = <f32>(beta1 * <f64>load<f32>(m + at) + oneMinusBeta1 * grad);
    const vNext = <f32>(beta2 * <f64>load<f32>(v + at) + oneMinusBeta2 * grad * grad);
    const update = <f64>mNext / correction1 / (Math.sqrt(<f64>vNext / correction2) + eps);
    store<f32>(mOut + at, mNext);
    store<f32>(vOut + at, vNext);
    store<f32>(pOut + at, <f32>(<f64>load<f32>(p + at) * decay - lr * update));
  }
}

/** beta moment + oneMinusBeta grad, or + (oneMinusBeta grad) grad for the second moment (JS's left-to-right order). */
// @ts-ignore: decorator
@inline
function moment(current: v128, grad: v128, beta: f64, oneMinusBeta: f64, squared: bool): v128 {
  let added = f64x2.mul(f64x2.splat(oneMinusBeta), grad);
  if (squared) added = f64x2.mul(added, grad);
  return f64x2.add(f64x2.mul(f64x2.splat(beta), current), added);
}

/** p decay - lr ((m / correction1) / (sqrt(v / correction2) + eps)). */
// @ts-ignore: decorator
@inline
function step(p: v128, m: v128, v: v128, correction1: f64, correction2: f64, eps: f64, lr: f64, decay: f64): v128 {
  const update = f64x2.div(f64x2.div(m, f64x2.splat(correction1)), f64x2.add(f64x2.sqrt(f64x2.div(v, f64x2.splat(correction2))), f64x2.splat(eps)));
  return f64x2.sub(f64x2.mul(p, f64x2.splat(decay)), f64x2.mul(f64x2.splat(lr), update));
}
