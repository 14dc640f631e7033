// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/matmul-transposed.wasm.ts (generated at build) and runs it on
// tfjs-wasm's own memory, which it imports, as matmul.ts does; and, compiled for a shared
// memory, on the matmul threads (section 4). No static data.
//
// The product computed is the backward pass of a frozen projection y = x W: the gradient
// with respect to its input, dx[M, K] = dy[M, N] W^T, read from the same panels that the
// forward pass multiplies (matmul.ts, section 1: packed[p][k][j] = W[k][8p + j]), so that
// training needs no second copy of W, neither transposed nor packed by XNNPACK.
//
// 1. Orientation. Computed as dxT[K, M] = W dyT: each weight W[k][n] is broadcast and
//    multiplied into a vector of 4 rows' dy[m][n], read from dy transposed in blocks of 8
//    rows (dyT[m / 8][n][m % 8]; M rounded up to Mp, a multiple of 8, zero past M). A
//    dot-product form (8 columns of a panel step against dy[m][8p..8p+8], horizontal sums at
//    the end) needs a horizontal sum per output and was the slow form for the forward kernel
//    too (matmul.ts, section 2).
//
// 2. Register tile: 4 k x 8 m, 8 accumulators. Per n it loads 2 vectors of dyT and
//    broadcasts the 4 weights W[k..k+4][n] (4 splat loads, 32 bytes apart in the panel), and
//    does 8 vector multiply-adds: the same loads per multiply-add as the forward 4 x 8 tile,
//    and 8 accumulators + 2 dy vectors + 1 broadcast fit x86-64's 16 SIMD registers. Each
//    multiply-add is one fused f32x4.relaxed_madd, as in the forward tiles (matmul.ts,
//    section 2).
//
// 3. Blocks. The tiles take the panels BLOCK_PANELS at a time (256 of N) and the rows of dy
//    BLOCK_ROWS at a time: the block's part of dyT (256 x 64 floats, 64 KB) stays in L2 while
//    every k tile runs over it, and each panel is read from memory once per call (from L2
//    again for each further block of rows). The accumulators wait between blocks in acc
//    (dxT, [K, Mp]); each output is still summed n by n in order. dyT's blocks of 8 rows make
//    a tile's dy one contiguous stream of 32 bytes per n: with dyT as plain rows of Mp floats
//    the tile read 32 bytes every Mp x 4 bytes, lines that shared a few L1 sets, and the
//    kernel ran at 0.65-0.8 of the forward kernel's rate (bench/transposed.bench.ts) where it
//    now runs at about 0.9.
//
// 4. Threads. The same source is also compiled for a shared memory (MATMUL_TRANSPOSED_SHARED
//    _WASM), where several threads divide one product by ranges of k (rows of W, columns of
//    dx) in multiples of 4, one tile's height: the caller writes dyT once (transposeRows), and
//    each thread reads all of it and writes only its own rows of acc and columns of dx. Each
//    thread reads only its rows of every panel, so W is still read once per call in all.
//    Ranges change which thread sums an output, not the order of its sum: the same bits as
//    one thread over [0, K).
//
// Panels must be f32 (not bf16 nor q8) and K a multiple of 4; the engine checks both and
// uses tf.matMul otherwise.

/** Panels per block, and rows of dy per block (section 3). */
const BLOCK_PANELS: i32 = 32;
const BLOCK_ROWS: i32 = 64;

/** M rounded up to a whole number of 8-row tiles: the row length of dyT and acc. */
@inline function paddedRows(M: i32): i32 {
  return (M + 7) & ~7;
}

/**
 * Rows kFrom..kTo of dxT, written out as columns kFrom..kTo of dx [M, K] = dy [M, N] W^T, with
 * W [K, N] packed by matmul.ts's pack() as f32 panels (N a multiple of 8, K a multiple of 4),
 * from dyT, which transposeRows wrote (Mp x N floats in blocks of 8 rows, Mp = M rounded up to
 * a multiple of 8). kFrom and kTo are multiples of 4; [0, K) is the whole product. Scratch:
 * acc of K x Mp floats, of which only rows kFrom..kTo are touched (section 4).
 */
export function matmulTransposedF32(packed: usize, dx: usize, M: i32, K: i32, N: i32, dyT: usize, acc: usize, kFrom: i32, kTo: i32): void {
  const Mp = paddedRows(M);
  const dRow = (<usize>Mp) << 2;
  memory.fill(acc + <usize>kFrom * dRow, 0, <usize>(kTo - kFrom) * dRow);
  const panelBytes = (<usize>K) << 5;
  const blockBytes = (<usize>N) << 5;
  const panels = N >> 3;
  for (let first = 0; first < panels; first += BLOCK_PANELS) {
    const count = min<i32>(panels, first + BLOCK_PANELS) - first;
    const w = packed + <usize>first * panelBytes;
    const d = dyT + ((<usize>first) << 8);
    for (let rows = 0; rows < Mp; rows += BLOCK_ROWS) {
      const rowsEnd = min<i32>(Mp, rows + BLOCK_ROWS);
      for (let k = kFrom; k < kTo; k += 4) {
        for (let m = rows; m < rowsEnd; m += 8) tile(w + ((<usize>k) << 5), panelBytes, count, d + <usize>(m >> 3) * blockBytes, acc + <usize>k * dRow + ((<usize>m) << 2), dRow);
      }
    }
  }
  for (let m = 0; m < M; m++) {
    const row = dx + (<usize>m) * ((<usize>K) << 2);
    for (let k = kFrom; k < kTo; k++) store<f32>(row + ((<usize>k) << 2), load<f32>(acc + <usize>k * dRow + ((<usize>m) << 2)));
  }
}

/**
 * dyT[m / 8][n][m % 8] = dy[m][n] for m < M, 0 for M <= m < Mp: blocks of 8 rows, each N x 8
 * floats, so that a tile reads its 8 rows' dy as one contiguous stream. Reads dy front to back.
 */
export function transposeRows(dy: usize, dyT: usize, M: i32, N: i32): void {
  const Mp = paddedRows(M);
  const blockBytes = (<usize>N) << 5;
  let src = dy;
  for (let m = 0; m < M; m++) {
    let dst = dyT + <usize>(m >> 3) * blockBytes + ((<usize>(m & 7)) << 2);
    for (let n = 0; n < N; n++) {
      store<f32>(dst, load<f32>(src));
      src += 4;
      dst += 32;
    }
  }
  for (let m = M; m < Mp; m++) {
    let dst = dyT + <usize>(m >> 3) * blockBytes + ((<usize>(m & 7)) << 2);
    for (let n = 0; n < N; n++, dst += 32) store<f32>(dst, 0);
  }
}

/**
 * acc[0..4][0..8] += W[k..k+4][n] dy[m..m+8][n] over the n of `panels` panels: w points at
 * row k of the first panel (panels panelBytes apart, rows 32 bytes apart), d at the first n's
 * 8 floats in dyT's block of rows m..m+8 (32 bytes per n), acc at acc[k][m] (rows dRow bytes
 * apart).
 */
@inline function tile(w: usize, panelBytes: usize, panels: i32, d: usize, acc: usize, dRow: usize): void {
  let a0 = v128.load(acc), a1 = v128.load(acc, 16);
  let b0 = v128.load(acc + dRow), b1 = v128.load(acc + dRow, 16);
  let c0 = v128.load(acc + 2 * dRow), c1 = v128.load(acc + 2 * dRow, 16);
  let e0 = v128.load(acc + 3 * dRow), e1 = v128.load(acc + 3 * dRow, 16);
  for (let p = 0; p < panels; p++, w += panelBytes) {
    for (let wj = w, end = w + 32; wj < end; wj += 4, d += 32) {
      const d0 = v128.load(d);
      const d1 = v128.load(d, 16);
      let s = v128.load32_splat(wj);
      a0 = f32x4.relaxed_madd(s, d0, a0);
      a1 = f32x4.relaxed_madd(s, d1, a1);
      s = v128.load32_splat(wj, 32);
      b0 = f32x4.relaxed_madd(s, d0, b0);
      b1 = f32x4.relaxed_madd(s, d1, b1);
      s = v128.load32_splat(wj, 64);
      c0 = f32x4.relaxed_madd(s, d0, c0);
      c1 = f32x4.relaxed_madd(s, d1, c1);
      s = v128.load32_splat(wj, 96);
      e0 = f32x4.relaxed_madd(s, d0, e0);
      e1 = f32x4.relaxed_madd(s, d1, e1);
    }
  }
  v128.store(acc, a0);
  v128.store(acc, a1, 16);
  v128.store(acc + dRow, b0);
  v128.store(acc + dRow, b1, 16);
  v128.store(acc + 2 * dRow, c0);
  v128.store(acc + 2 * dRow, c1, 16);
  v128.store(acc + 3 * dRow, e0);
  v128.store(acc + 3 * dRow, e1, 16);
}
