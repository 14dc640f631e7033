// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/rope.wasm.ts (generated at build) and runs it on tfjs-wasm's
// own memory, as the matmul kernel does. No static data.
//
// Rotary position embeddings, x * cos + rotate_half(x) * sin with rotate_half(x) = [-x2, x1],
// in one call where tfjs runs six kernels (reshape, the rotation as a matMul by a signed
// permutation, reshape, two multiplies, an add), for the q and k heads of every layer. The
// same operations on the same values as those kernels (the permutation's products are exact,
// and a + (-b) is a - b), so the same bits. ropeBackward is its gradient, for training.

/**
 * out[r] = x[r] * cos[r] + rotate_half(x[r]) * sin[r] for rows r < rows of D floats (D a
 * multiple of 8): x, cos, sin and out all [rows, D].
 */
export function rope(x: usize, cos: usize, sin: usize, out: usize, rows: i32, D: i32): void {
  const rowBytes = (<usize>D) << 2;
  const half = rowBytes >> 1;
  const total = <usize>rows * rowBytes;
  for (let row: usize = 0; row < total; row += rowBytes) {
    for (let at = row; at < row + half; at += 16) {
      const x1 = v128.load(x + at);
      const x2 = v128.load(x + at + half);
      v128.store(out + at, f32x4.add(f32x4.mul(x1, v128.load(cos + at)), f32x4.mul(f32x4.neg(x2), v128.load(sin + at))));
      v128.store(out + at + half, f32x4.add(f32x4.mul(x2, v128.load(cos + at + half)), f32x4.mul(x1, v128.load(sin + at + half))));
    }
  }
}

/**
 * The gradient of rope with respect to x, for dy [rows, D]: rope is x * cos + R x * sin with R
 * the rotation [x1, x2] -> [-x2, x1], so dx = dy * cos + R^T (dy * sin), and R^T takes
 * [u1, u2] to [u2, -u1]:
 *   dx1 = dy1 cos1 + dy2 sin2,   dx2 = dy2 cos2 - dy1 sin1.
 */
export function ropeBackward(dy: usize, cos: usize, sin: usize, dx: usize, rows: i32, D: i32): void {
  const rowBytes = (<usize>D) << 2;
  const half = rowBytes >> 1;
  const total = <usize>rows * rowBytes;
  for (let row: usize = 0; row < total; row += rowBytes) {
    for (let at = row; at < row + half; at += 16) {
      const g1 = v128.load(dy + at);
      const g2 = v128.load(dy + at + half);
      v128.store(dx + at, f32x4.add(f32x4.mul(g1, v128.load(cos + at)), f32x4.mul(g2, v128.load(sin + at + half))));
      v128.store(dx + at + half, f32x4.sub(f32x4.mul(g2, v128.load(cos + at + half)), f32x4.mul(g1, v128.load(sin + at))));
    }
  }
}
