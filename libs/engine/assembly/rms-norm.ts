// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/rms-norm.wasm.ts (generated at build) and runs it on tfjs-wasm's
// own memory, as the matmul kernel does. No static data.
//
// RMSNorm of a decoding step's rows, out = x / sqrt(mean(x^2) + eps) * weight, in one call
// where tfjs runs six kernels (square, mean, add, rsqrt, multiply, multiply), each a dispatch
// of several microseconds for a row of a few hundred floats: 61 norms per token on a 30-layer
// model. Each row is computed alone, the same way whatever the rows beside it, so a sequence
// gets the same bits alone as in a batch. rmsNormBackward is its gradient, for training.

/**
 * out[r] = x[r] * (1 / sqrt(sum(x[r]^2) / C + eps)) * weight, for rows r < M of x [M, C]
 * (C a multiple of 4); the squares are summed in four lanes, then the lanes together.
 */
export function rmsNorm(x: usize, weight: usize, out: usize, M: i32, C: i32, eps: f32): void {
  const rowBytes = (<usize>C) << 2;
  for (let r = 0; r < M; r++) {
    const row = x + <usize>r * rowBytes;
    const dst = out + <usize>r * rowBytes;
    let sum = f32x4.splat(0);
    for (let at: usize = 0; at < rowBytes; at += 16) {
      const v = v128.load(row + at);
      sum = f32x4.add(sum, f32x4.mul(v, v));
    }
    const squares = f32x4.extract_lane(sum, 0) + f32x4.extract_lane(sum, 1) + (f32x4.extract_lane(sum, 2) + f32x4.extract_lane(sum, 3));
    const scale = f32x4.splat(<f32>1 / Mathf.sqrt(squares / <f32>C + eps));
    for (let at: usize = 0; at < rowBytes; at += 16) {
      v128.store(dst + at, f32x4.mul(f32x4.mul(v128.load(row + at), scale), v128.load(weight + at)));
    }
  }
}

/**
 * The gradient of rmsNorm with respect to x, for a training step's backward pass: with
 * s = 1 / sqrt(sum(x^2) / C + eps) and g = dy * weight per row,
 *   dx = s g - x s^3 sum(g x) / C.
 * The weight is frozen (no gradient of its own). Rows of x, dy and dx [M, C], C a multiple of 4.
 */
export function rmsNormBackward(x: usize, weight: usize, dy: usize, dx: usize, M: i32, C: i32, eps: f32): void {
  const rowBytes = (<usize>C) << 2;
  for (let r = 0; r < M; r++) {
    const row = x + <usize>r * rowBytes;
    const grad = dy + <usize>r * rowBytes;
    const dst = dx + <usize>r * rowBytes;
    let squares = f32x4.splat(0);
    let dots = f32x4.splat(0);
    for (let at: usize = 0; at < rowBytes; at += 16) {
      const v = v128.load(row + at);
      squares = f32x4.add(squares, f32x4.mul(v, v));
      dots = f32x4.add(dots, f32x4.mul(f32x4.mul(v128.load(grad + at), v128.load(weight + at)), v));
    }
    const sum = f32x4.extract_lane(squares, 0) + f32x4.extract_lane(squares, 1) + (f32x4.extract_lane(squares, 2) + f32x4.extract_lane(squares, 3));
    const dot = f32x4.extract_lane(dots, 0) + f32x4.extract_lane(dots, 1) + (f32x4.extract_lane(dots, 2) + f32x4.extract_lane(dots, 3));
    const s = <f32>1 / Mathf.sqrt(sum / <f32>C + eps);
    const ss = f32x4.splat(s);
    const correction = f32x4.splat((s * s * s * dot) / <f32>C);
    for (let at: usize = 0; at < rowBytes; at += 16) {
      const g = f32x4.mul(v128.load(grad + at), v128.load(weight + at));
      v128.store(dst + at, f32x4.sub(f32x4.mul(g, ss), f32x4.mul(v128.load(row + at), correction)));
    }
  }
}
