// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/matmul.wasm.ts (generated, committed) and runs it on tfjs-wasm's
// own memory, which it imports: it reads the input tensors and writes the output tensor
// where tfjs keeps them, without copying. No static data (see decode-attention.ts).
//
// The product computed is a model projection: out[M, N] = x[M, K] W[K, N] (+ bias[N]) with
// a large weight matrix W that never changes. It is shaped for decoding, few rows M (one
// per sequence of the decode batch): each weight is used only M times per call, so the work
// is bounded by streaming W from memory and by how many multiply-adds each loaded weight
// feeds. (It turned out faster than XNNPACK for prefill's hundreds of rows too.)
//
// 1. Packing. W is rearranged once, before its first use, into panels of 8 columns:
//
//      packed[p][k][j] = W[k][8p + j]      p < N/8, k < K, j < 8
//
//    A panel is one contiguous run of K * 8 floats, read front to back: every step along
//    k loads the next 32 bytes. Read straight from the row-major W, the same 8 columns sit
//    N floats apart at each k, a new cache line (and every 1024 steps a new page) per step.
//
// 2. Register tile. The inner loop keeps a 4 x 8 block of out in 8 SIMD registers (4 rows,
//    two f32x4 halves of the panel's 8 columns). Per k it loads the panel's 8 weights once
//    (2 vectors), broadcasts x[r][k] for each of the 4 rows (4 splat loads) and does 8
//    vector multiply-adds: each weight loaded feeds 4 rows. 8 accumulators + 2 weights + 1
//    broadcast fit the 16 SIMD registers of x86-64 without spills (an 8 x 8 tile would need
//    16 accumulators). An 8 x 4 tile over 4-column panels, and a dot-product form over
//    [N, K] weights (horizontal sums at the end of each column) were both measured much
//    slower with V8's code. Leftover rows (M not a multiple of 4) use a 2 x 8 and a 1 x 8
//    tile.
//
// 3. No K blocking. Each tile runs down the whole panel, K steps, with its accumulators in
//    registers, starting from the bias (or zero) and storing once at the end. Cutting K into
//    blocks that stay in the 32 KB L1 (so that the second 4-row tile of 8 rows rereads the
//    panel from L1, not L2) was measured with blocks of 96-512 steps, on SmolLM2-135M's
//    matrices (K 576 and 1536) and on 8192 x 2048 ones, for 1-64 rows: never faster than
//    the whole K, by up to 8% slower (each block loads and stores the accumulators again).
//    The rereads come from L2 as fast as the multiply-adds consume them.
//
// Loop order: panels outermost, so each panel streams from memory once per call, while the
// x rows (M * K floats: a few KB when decoding) stay in cache across all panels.

/**
 * Rearranges w [K, N] (row-major) into panels of 8 columns, packed [N/8, K, 8] as above.
 * N must be a multiple of 8. Reads w sequentially, row by row.
 */
export function pack(w: usize, packed: usize, K: i32, N: i32): void {
  const panelBytes = (<usize>K) << 5;
  let src = w;
  for (let k = 0; k < K; k++) {
    let dst = packed + ((<usize>k) << 5);
    for (let p = 0; p < N >> 3; p++) {
      v128.store(dst, v128.load(src));
      v128.store(dst, v128.load(src, 16), 16);
      src += 32;
      dst += panelBytes;
    }
  }
}

/**
 * out [M, N] = x [M, K] packed + bias, with packed from pack() (N a multiple of 8) and bias
 * [N] or 0 for none. Any K, any M >= 1.
 */
export function matmul(x: usize, packed: usize, bias: usize, out: usize, M: i32, K: i32, N: i32): void {
  const xRow = (<usize>K) << 2;
  const outRow = (<usize>N) << 2;
  for (let p = 0; p < N >> 3; p++) {
    const panel = packed + <usize>p * (xRow << 3);
    const column = (<usize>p) << 5;
    // The 8 columns' bias: every row's accumulators start from it.
    const bias0 = bias ? v128.load(bias + column) : f32x4.splat(0);
    const bias1 = bias ? v128.load(bias + column, 16) : f32x4.splat(0);
    let r = 0;
    for (; r + 4 <= M; r += 4) tile4(x + <usize>r * xRow, panel, out + <usize>r * outRow + column, xRow, outRow, bias0, bias1);
    if (r + 2 <= M) {
      tile2(x + <usize>r * xRow, panel, out + <usize>r * outRow + column, xRow, outRow, bias0, bias1);
      r += 2;
    }
    if (r < M) tile1(x + <usize>r * xRow, panel, out + <usize>r * outRow + column, K, bias0, bias1);
  }
}

/**
 * out[0..4][0..8] = bias + x[0..4][0..K] panel[0..K][0..8]: the 4 x 8 register tile.
 * x rows are xRow (4 K) bytes apart, out rows outRow bytes apart; panel rows are 32 bytes.
 */
@inline function tile4(x: usize, panel: usize, out: usize, xRow: usize, outRow: usize, bias0: v128, bias1: v128): void {
  let a0 = bias0, a1 = bias1;
  let b0 = bias0, b1 = bias1;
  let c0 = bias0, c1 = bias1;
  let d0 = bias0, d1 = bias1;
  let w = panel;
  for (let xk = x, end = x + xRow; xk < end; xk += 4, w += 32) {
    const w0 = v128.load(w);
    const w1 = v128.load(w, 16);
    let s = v128.load32_splat(xk);
    a0 = f32x4.add(a0, f32x4.mul(s, w0));
    a1 = f32x4.add(a1, f32x4.mul(s, w1));
    s = v128.load32_splat(xk + xRow);
    b0 = f32x4.add(b0, f32x4.mul(s, w0));
    b1 = f32x4.add(b1, f32x4.mul(s, w1));
    s = v128.load32_splat(xk + 2 * xRow);
    c0 = f32x4.add(c0, f32x4.mul(s, w0));
    c1 = f32x4.add(c1, f32x4.mul(s, w1));
    s = v128.load32_splat(xk + 3 * xRow);
    d0 = f32x4.add(d0, f32x4.mul(s, w0));
    d1 = f32x4.add(d1, f32x4.mul(s, w1));
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
  v128.store(out + outRow, b0);
  v128.store(out + outRow, b1, 16);
  v128.store(out + 2 * outRow, c0);
  v128.store(out + 2 * outRow, c1, 16);
  v128.store(out + 3 * outRow, d0);
  v128.store(out + 3 * outRow, d1, 16);
}

/** tile4 for 2 rows. */
@inline function tile2(x: usize, panel: usize, out: usize, xRow: usize, outRow: usize, bias0: v128, bias1: v128): void {
  let a0 = bias0, a1 = bias1;
  let b0 = bias0, b1 = bias1;
  let w = panel;
  for (let xk = x, end = x + xRow; xk < end; xk += 4, w += 32) {
    const w0 = v128.load(w);
    const w1 = v128.load(w, 16);
    let s = v128.load32_splat(xk);
    a0 = f32x4.add(a0, f32x4.mul(s, w0));
    a1 = f32x4.add(a1, f32x4.mul(s, w1));
    s = v128.load32_splat(xk + xRow);
    b0 = f32x4.add(b0, f32x4.mul(s, w0));
    b1 = f32x4.add(b1, f32x4.mul(s, w1));
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
  v128.store(out + outRow, b0);
  v128.store(out + outRow, b1, 16);
}

/** tile4 for 1 row. */
@inline function tile1(x: usize, panel: usize, out: usize, K: i32, bias0: v128, bias1: v128): void {
  let a0 = bias0, a1 = bias1;
  let w = panel;
  for (let xk = x, end = x + ((<usize>K) << 2); xk < end; xk += 4, w += 32) {
    const s = v128.load32_splat(xk);
    a0 = f32x4.add(a0, f32x4.mul(s, v128.load(w)));
    a1 = f32x4.add(a1, f32x4.mul(s, v128.load(w, 16)));
  }
  v128.store(out, a0);
  v128.store(out, a1, 16);
}
