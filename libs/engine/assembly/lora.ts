// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/lora.wasm.ts (generated at build) and runs it on tfjs-wasm's own
// memory, which it imports; and, compiled for a shared memory (LORA_SHARED_WASM), on the
// matmul threads (the exports at the end). No static data.
//
// LoRA's products beside a frozen projection y = x W, for training (src/kernels/lora.ts): one
// call per projection and pass in place of a dozen tfjs ops per adapter. An adapter on the
// columns [col, col + N) of the projection's output is delta = s (x aT) bT, with aT [K, r],
// bT [r, N] and s = alpha / r:
//
//   forward   h = x aT                     [M, r]
//             y[:, col..] += s h bT        [M, N]
//   backward  (g = dy[:, col..], h recomputed from x)
//             dbT = s h^T g                [r, N]
//             dh  = s g bT^T               [M, r]
//             daT = x^T dh                 [K, r]
//             dx += dh aT^T                [M, K]
//
// Every one of these is either rows times a panel of contiguous rows (scaledProduct: one
// operand read by strides, the other row by row, vectorized along the output's rows), or dot
// products of contiguous rows (scaledDots). Multiply-adds are fused (f32x4.relaxed_madd), as
// in training's other products (matmul.ts, section 2). K, N and r must be multiples of 4.
//
// Every output is one chain of multiply-adds in a fixed order, whichever tile computes it and
// whatever rows or columns are computed beside it. So the products can be cut into ranges of
// rows or columns, one range per call, and give the same bits as one call over all of them:
// what the matmul threads do (src/kernels/matmul-threads.ts), with the forward pass and the
// backward's h, dh and dx divided by rows of x, daT by its rows (k) and dbT by its columns
// (the exports at the end).

import { matmulTransposedF32 } from './matmul-transposed';

/**
 * out[i][0..N] (+)= s sum_t a[i strideI + t strideT] b[t][0..N] for i < I: a is read by strides
 * (in floats), b's rows are bRow bytes apart, out's outRow bytes apart; adds to out when
 * `accumulate`. The sums over t are chains of multiply-adds, each waiting on the one before:
 * the tiles keep eight independent chains, two rows by sixteen columns where N is wide (the
 * adapters' outputs, dx), four rows by eight columns where it is r (h = x aT, daT).
 */
function scaledProduct(a: usize, strideI: usize, strideT: usize, b: usize, bRow: usize, out: usize, outRow: usize, I: i32, T: i32, N: i32, s: f32, accumulate: bool): void {
  const width = (<usize>N) << 2;
  const si = strideI << 2;
  const st = strideT << 2;
  let n: usize = 0;
  for (; n + 64 <= width; n += 64) {
    let i = 0;
    for (; i + 2 <= I; i += 2) tile2x16(a + <usize>i * si, si, st, b + n, bRow, out + <usize>i * outRow + n, outRow, T, s, accumulate);
    for (; i < I; i++) for (let c: usize = 0; c < 64; c += 16) tile1x4(a + <usize>i * si, st, b + n + c, bRow, out + <usize>i * outRow + n + c, T, s, accumulate);
  }
  for (; n + 32 <= width; n += 32) {
    let i = 0;
    for (; i + 4 <= I; i += 4) tile4x8(a + <usize>i * si, si, st, b + n, bRow, out + <usize>i * outRow + n, outRow, T, s, accumulate);
    for (; i < I; i++) for (let c: usize = 0; c < 32; c += 16) tile1x4(a + <usize>i * si, st, b + n + c, bRow, out + <usize>i * outRow + n + c, T, s, accumulate);
  }
  for (; n < width; n += 16) for (let i = 0; i < I; i++) tile1x4(a + <usize>i * si, st, b + n, bRow, out + <usize>i * outRow + n, T, s, accumulate);
}

/** Rows i, i + 1 by sixteen columns of scaledProduct (a at a[i][0], b at b[0][n], out at out[i][n]). */
@inline function tile2x16(a: usize, si: usize, st: usize, b: usize, bRow: usize, out: usize, outRow: usize, T: i32, s: f32, accumulate: bool): void {
  let c0 = f32x4.splat(0), c1 = f32x4.splat(0), c2 = f32x4.splat(0), c3 = f32x4.splat(0);
  let d0 = f32x4.splat(0), d1 = f32x4.splat(0), d2 = f32x4.splat(0), d3 = f32x4.splat(0);
  for (let t = 0; t < T; t++, a += st, b += bRow) {
    const b0 = v128.load(b), b1 = v128.load(b, 16), b2 = v128.load(b, 32), b3 = v128.load(b, 48);
    const u = v128.load32_splat(a);
    c0 = f32x4.relaxed_madd(u, b0, c0);
    c1 = f32x4.relaxed_madd(u, b1, c1);
    c2 = f32x4.relaxed_madd(u, b2, c2);
    c3 = f32x4.relaxed_madd(u, b3, c3);
    const w = v128.load32_splat(a + si);
    d0 = f32x4.relaxed_madd(w, b0, d0);
    d1 = f32x4.relaxed_madd(w, b1, d1);
    d2 = f32x4.relaxed_madd(w, b2, d2);
    d3 = f32x4.relaxed_madd(w, b3, d3);
  }
  const ss = f32x4.splat(s);
  store4(out, f32x4.mul(c0, ss), accumulate);
  store4(out + 16, f32x4.mul(c1, ss), accumulate);
  store4(out + 32, f32x4.mul(c2, ss), accumulate);
  store4(out + 48, f32x4.mul(c3, ss), accumulate);
  store4(out + outRow, f32x4.mul(d0, ss), accumulate);
  store4(out + outRow + 16, f32x4.mul(d1, ss), accumulate);
  store4(out + outRow + 32, f32x4.mul(d2, ss), accumulate);
  store4(out + outRow + 48, f32x4.mul(d3, ss), accumulate);
}

/** Rows i .. i + 3 by eight columns of scaledProduct. */
@inline function tile4x8(a: usize, si: usize, st: usize, b: usize, bRow: usize, out: usize, outRow: usize, T: i32, s: f32, accumulate: bool): void {
  let c0 = f32x4.splat(0), c1 = f32x4.splat(0), d0 = f32x4.splat(0), d1 = f32x4.splat(0);
  let e0 = f32x4.splat(0), e1 = f32x4.splat(0), f0 = f32x4.splat(0), f1 = f32x4.splat(0);
  for (let t = 0; t < T; t++, a += st, b += bRow) {
    const b0 = v128.load(b), b1 = v128.load(b, 16);
    let u = v128.load32_splat(a);
    c0 = f32x4.relaxed_madd(u, b0, c0);
    c1 = f32x4.relaxed_madd(u, b1, c1);
    u = v128.load32_splat(a + si);
    d0 = f32x4.relaxed_madd(u, b0, d0);
    d1 = f32x4.relaxed_madd(u, b1, d1);
    u = v128.load32_splat(a + 2 * si);
    e0 = f32x4.relaxed_madd(u, b0, e0);
    e1 = f32x4.relaxed_madd(u, b1, e1);
    u = v128.load32_splat(a + 3 * si);
    f0 = f32x4.relaxed_madd(u, b0, f0);
    f1 = f32x4.relaxed_madd(u, b1, f1);
  }
  const ss = f32x4.splat(s);
  store4(out, f32x4.mul(c0, ss), accumulate);
  store4(out + 16, f32x4.mul(c1, ss), accumulate);
  store4(out + outRow, f32x4.mul(d0, ss), accumulate);
  store4(out + outRow + 16, f32x4.mul(d1, ss), accumulate);
  store4(out + 2 * outRow, f32x4.mul(e0, ss), accumulate);
  store4(out + 2 * outRow + 16, f32x4.mul(e1, ss), accumulate);
  store4(out + 3 * outRow, f32x4.mul(f0, ss), accumulate);
  store4(out + 3 * outRow + 16, f32x4.mul(f1, ss), accumulate);
}

/** One row by four columns of scaledProduct: the edges the tiles leave. */
@inline function tile1x4(a: usize, st: usize, b: usize, bRow: usize, out: usize, T: i32, s: f32, accumulate: bool): void {
  let c = f32x4.splat(0);
  for (let t = 0; t < T; t++, a += st, b += bRow) c = f32x4.relaxed_madd(v128.load32_splat(a), v128.load(b), c);
  store4(out, f32x4.mul(c, f32x4.splat(s)), accumulate);
}

/**
 * out[i][j] = s sum_l a[i][l] b[j][l] for i < I, j < J: dot products of a's and b's contiguous
 * rows of L floats (rows aRow and bRow bytes apart; out's rows outRow bytes apart), two rows
 * of b at a time, two chains each.
 */
function scaledDots(a: usize, aRow: usize, b: usize, bRow: usize, out: usize, outRow: usize, I: i32, J: i32, L: i32, s: f32): void {
  const length = (<usize>L) << 2;
  for (let i = 0; i < I; i++) {
    const ai = a + <usize>i * aRow;
    const row = out + <usize>i * outRow;
    let j = 0;
    for (; j + 2 <= J; j += 2) {
      const bj = b + <usize>j * bRow;
      let c0 = f32x4.splat(0), c1 = f32x4.splat(0), d0 = f32x4.splat(0), d1 = f32x4.splat(0);
      let l: usize = 0;
      for (; l + 32 <= length; l += 32) {
        const a0 = v128.load(ai + l), a1 = v128.load(ai + l, 16);
        c0 = f32x4.relaxed_madd(a0, v128.load(bj + l), c0);
        c1 = f32x4.relaxed_madd(a1, v128.load(bj + l, 16), c1);
        d0 = f32x4.relaxed_madd(a0, v128.load(bj + bRow + l), d0);
        d1 = f32x4.relaxed_madd(a1, v128.load(bj + bRow + l, 16), d1);
      }
      for (; l < length; l += 16) {
        const a0 = v128.load(ai + l);
        c0 = f32x4.relaxed_madd(a0, v128.load(bj + l), c0);
        d0 = f32x4.relaxed_madd(a0, v128.load(bj + bRow + l), d0);
      }
      store<f32>(row + ((<usize>j) << 2), s * horizontalSum(f32x4.add(c0, c1)));
      store<f32>(row + ((<usize>j) << 2), s * horizontalSum(f32x4.add(d0, d1)), 4);
    }
    for (; j < J; j++) {
      const bj = b + <usize>j * bRow;
      let c0 = f32x4.splat(0);
      for (let l: usize = 0; l < length; l += 16) c0 = f32x4.relaxed_madd(v128.load(ai + l), v128.load(bj + l), c0);
      store<f32>(row + ((<usize>j) << 2), s * horizontalSum(c0));
    }
  }
}

@inline function horizontalSum(c: v128): f32 {
  return f32x4.extract_lane(c, 0) + f32x4.extract_lane(c, 1) + f32x4.extract_lane(c, 2) + f32x4.extract_lane(c, 3);
}

@inline function store4(at: usize, v: v128, accumulate: bool): void {
  v128.store(at, accumulate ? f32x4.add(v128.load(at), v) : v);
}

/**
 * The forward pass over `rows` rows (x, y and h at their first): h = x aT, then y += s h bT,
 * with x's rows K floats and y's yRow bytes apart.
 */
@inline function forwardRows(x: usize, K: i32, aT: usize, bT: usize, s: f32, y: usize, yRow: usize, rows: i32, r: i32, N: i32, h: usize): void {
  const rRow = (<usize>r) << 2;
  scaledProduct(x, <usize>K, 1, aT, rRow, h, rRow, rows, K, r, 1, false);
  scaledProduct(h, <usize>r, 1, bT, (<usize>N) << 2, y, yRow, rows, r, N, s, true);
}

/**
 * The backward pass's row-wise products over `rows` rows (x, g, h, dh and dx at their first):
 * h = x aT, dh = s g bT^T, and dx += dh a, a being aT transposed ([r, K]); g's rows are gRow
 * bytes apart.
 */
function backwardRowProducts(x: usize, K: i32, g: usize, gRow: usize, aT: usize, a: usize, bT: usize, s: f32, rows: i32, r: i32, N: i32, h: usize, dh: usize, dx: usize): void {
  const rRow = (<usize>r) << 2;
  const kRow = (<usize>K) << 2;
  scaledProduct(x, <usize>K, 1, aT, rRow, h, rRow, rows, K, r, 1, false);
  scaledDots(g, gRow, bT, (<usize>N) << 2, dh, rRow, rows, r, N, s);
  scaledProduct(dh, <usize>r, 1, a, kRow, dx, kRow, rows, r, K, 1, true);
}

/** daT's rows [k0, k1): daT[k] = sum_m x[m][k] dh[m] over the M rows, x read down its columns. */
@inline function daTRows(x: usize, K: i32, M: i32, dh: usize, r: i32, daT: usize, k0: i32, k1: i32): void {
  const rRow = (<usize>r) << 2;
  scaledProduct(x + ((<usize>k0) << 2), 1, <usize>K, dh, rRow, daT + <usize>k0 * rRow, rRow, k1 - k0, M, r, 1, false);
}

/** dbT's columns [n0, n1): dbT[j] = s sum_m h[m][j] g[m] over the M rows, h read down its columns. */
@inline function dbTColumns(h: usize, r: i32, M: i32, g: usize, gRow: usize, s: f32, dbT: usize, N: i32, n0: i32, n1: i32): void {
  const at = (<usize>n0) << 2;
  scaledProduct(h, 1, <usize>r, g + at, gRow, dbT + at, (<usize>N) << 2, r, M, n1 - n0, s, false);
}

/**
 * y[:, col..col + N] += s (x aT) bT, in place: x [M, K], aT [K, r], bT [r, N], y's rows
 * yWidth floats. Scratch: h of M x r floats.
 */
export function loraForward(x: usize, aT: usize, bT: usize, s: f32, y: usize, M: i32, K: i32, r: i32, N: i32, yWidth: i32, col: i32, h: usize): void {
  forwardRows(x, K, aT, bT, s, y + ((<usize>col) << 2), (<usize>yWidth) << 2, M, r, N, h);
}

/**
 * One adapter's backward pass (see the file's head): from x [M, K] and dy's columns
 * [col, col + N) (dy's rows dyWidth floats), writes daT [K, r] and dbT [r, N] and adds
 * dh aT^T into dx [M, K] in place. Scratch: h and dh, M x r floats each, and a, r x K floats
 * (aT transposed, so that dx's sums run along its rows).
 */
export function loraBackward(x: usize, dy: usize, aT: usize, bT: usize, s: f32, dx: usize, daT: usize, dbT: usize, M: i32, K: i32, r: i32, N: i32, dyWidth: i32, col: i32, h: usize, dh: usize, a: usize): void {
  const g = dy + ((<usize>col) << 2);
  const gRow = (<usize>dyWidth) << 2;
  transposeFactor(aT, a, K, r);
  backwardRowProducts(x, K, g, gRow, aT, a, bT, s, M, r, N, h, dh, dx);
  dbTColumns(h, r, M, g, gRow, s, dbT, N, 0, N);
  daTRows(x, K, M, dh, r, daT, 0, K);
}

/** a [r, K] = aT [K, r] transposed: the rows dx's sums run along. */
export function transposeFactor(aT: usize, a: usize, K: i32, r: i32): void {
  for (let k = 0; k < K; k++) for (let j = 0; j < r; j++) store<f32>(a + ((<usize>(j * K + k)) << 2), load<f32>(aT + ((<usize>(k * r + j)) << 2)));
}

// On the matmul threads. The parts of a projection are described by a table in memory, one row
// of PART_SLOTS 32-bit slots per part (the engine writes it: src/kernels/matmul-threads.ts):
// where its operands and scratch are, its scale and its shape. a is aT transposed ([r, K]),
// h and dh are [M, r]. Each export computes the range [from, to) of its units; `thread` (the
// matmul threads' calling convention) is not used. The backward pass's exports divide it in
// two pools of units, each pool's work independent within it: the rows' work with the frozen
// dx, then the adding of dx with the sums over the rows. The units keep the tiles whole: rows in
// fours (the 4 x 8 tiles of h; a range of odd rows would leave single rows to the 1 x 4 tile,
// one chain of multiply-adds waiting on the one before), daT's rows and dbT's columns in
// sixteens (four 4 x 8 tiles, one 2 x 16 tile).
const PART_SLOTS = 11;
const AT = 0, A = 1, BT = 2, SCALE = 3, COL = 4, R = 5, N_SLOT = 6, H = 7, DH = 8, DAT = 9, DBT = 10;
/** Rows or columns per unit of backwardSums. */
const SUM_UNIT = 16;

@inline function slot(table: usize, part: i32, which: i32): i32 {
  return load<i32>(table + ((<usize>(part * PART_SLOTS + which)) << 2));
}

@inline function pointer(table: usize, part: i32, which: i32): usize {
  return <usize>slot(table, part, which);
}

@inline function scaleOf(table: usize, part: i32): f32 {
  return load<f32>(table + ((<usize>(part * PART_SLOTS + SCALE)) << 2));
}

/** loraForward for rows [from, min(to, M)) of x [M, K] and y (rows yWidth floats), every part of the table in turn; h is each part's. */
export function loraForwardRows(x: usize, K: i32, M: i32, table: usize, parts: i32, y: usize, yWidth: i32, from: i32, to: i32, thread: i32): void {
  const xs = x + <usize>from * ((<usize>K) << 2);
  const yRow = (<usize>yWidth) << 2;
  for (let p = 0; p < parts; p++) {
    const r = slot(table, p, R);
    const ys = y + <usize>from * yRow + ((<usize>slot(table, p, COL)) << 2);
    forwardRows(xs, K, pointer(table, p, AT), pointer(table, p, BT), scaleOf(table, p), ys, yRow, min(to, M) - from, r, slot(table, p, N_SLOT), pointer(table, p, H) + <usize>from * ((<usize>r) << 2));
  }
}

/**
 * The row-wise part of the backward pass, rows [from, end): each part's h and dh, and its
 * dh aT^T added into dxLora (zeroed here first), as loraBackward computes them. dy's rows are
 * dyWidth floats.
 */
function backwardRows(x: usize, K: i32, dy: usize, dyWidth: i32, table: usize, parts: i32, dxLora: usize, from: i32, end: i32): void {
  const rows = end - from;
  const kRow = (<usize>K) << 2;
  const gRow = (<usize>dyWidth) << 2;
  const xs = x + <usize>from * kRow;
  const dxs = dxLora + <usize>from * kRow;
  memory.fill(dxs, 0, <usize>rows * kRow);
  for (let p = 0; p < parts; p++) {
    const r = slot(table, p, R);
    const rRow = (<usize>r) << 2;
    const g = dy + <usize>from * gRow + ((<usize>slot(table, p, COL)) << 2);
    const h = pointer(table, p, H) + <usize>from * rRow;
    const dh = pointer(table, p, DH) + <usize>from * rRow;
    backwardRowProducts(xs, K, g, gRow, pointer(table, p, AT), pointer(table, p, A), pointer(table, p, BT), scaleOf(table, p), rows, r, slot(table, p, N_SLOT), h, dh, dxs);
  }
}

/**
 * An adapted projection's backward pass, first half: units [from, to) of the adapters'
 * row-wise work into dxLora (ceil(M / 4) units of 4 rows: backwardRows), then of the frozen
 * input gradient dx = dy W^T (K / 4 units, matmulTransposedF32's ranges of 4 rows of W, from
 * dyT), which the rows' work does not need. One pool for both, the small units first: the
 * threads take a share of the units left at a time, so the costly ones, last, come in
 * shrinking chunks and the threads finish together.
 */
export function adaptedBackwardFirst(packed: usize, dx: usize, M: i32, K: i32, N: i32, dyT: usize, acc: usize, x: usize, dy: usize, table: usize, parts: i32, dxLora: usize, from: i32, to: i32, thread: i32): void {
  const rows = (M + 3) >> 2;
  if (from < rows) backwardRows(x, K, dy, N, table, parts, dxLora, from << 2, min(M, to << 2));
  if (to > rows) matmulTransposedF32(packed, dx, M, K, N, dyT, acc, max(from - rows, 0) << 2, (to - rows) << 2);
}

/**
 * Its second half, after the first: units [from, to) of dx += dxLora (ceil(M / 4) units of
 * 4 rows; dx + dxLora, as tf.add adds them on one thread), then of the sums over the rows
 * (loraSumUnits of them: backwardSums), the small units first again.
 */
export function adaptedBackwardSecond(x: usize, K: i32, M: i32, dy: usize, N: i32, table: usize, parts: i32, dxLora: usize, dx: usize, from: i32, to: i32, thread: i32): void {
  const rows = (M + 3) >> 2;
  if (from < rows) {
    const kRow = (<usize>K) << 2;
    const last = <usize>min(M, to << 2) * kRow;
    for (let at = <usize>(from << 2) * kRow; at < last; at += 16) v128.store(dx + at, f32x4.add(v128.load(dx + at), v128.load(dxLora + at)));
  }
  if (to > rows) backwardSums(x, K, M, dy, N, table, parts, max(from - rows, 0), to - rows);
}

/** Units of SUM_UNIT that n rows or columns take, the last one partial. */
@inline function sumUnits(n: i32): i32 {
  return (n + SUM_UNIT - 1) / SUM_UNIT;
}

/**
 * The backward pass's sums over the rows, after backwardRows, in units of SUM_UNIT: each
 * part's daT rows then its dbT columns, parts in turn (a part's last unit of each partial
 * where K or N is not a multiple of SUM_UNIT); computes units [from, to).
 */
function backwardSums(x: usize, K: i32, M: i32, dy: usize, dyWidth: i32, table: usize, parts: i32, from: i32, to: i32): void {
  const gRow = (<usize>dyWidth) << 2;
  let base = 0;
  for (let p = 0; p < parts && base < to; p++) {
    const r = slot(table, p, R);
    const N = slot(table, p, N_SLOT);
    let lo = max(from, base), hi = min(to, base + sumUnits(K));
    if (lo < hi) daTRows(x, K, M, pointer(table, p, DH), r, pointer(table, p, DAT), (lo - base) * SUM_UNIT, min(K, (hi - base) * SUM_UNIT));
    base += sumUnits(K);
    lo = max(from, base);
    hi = min(to, base + sumUnits(N));
    if (lo < hi) {
      const g = dy + ((<usize>slot(table, p, COL)) << 2);
      dbTColumns(pointer(table, p, H), r, M, g, gRow, scaleOf(table, p), pointer(table, p, DBT), N, (lo - base) * SUM_UNIT, min(N, (hi - base) * SUM_UNIT));
    }
    base += sumUnits(N);
  }
}

/** How many units backwardSums divides the parts' sums into. */
export function loraSumUnits(K: i32, table: usize, parts: i32): i32 {
  let units = 0;
  for (let p = 0; p < parts; p++) units += sumUnits(K) + sumUnits(slot(table, p, N_SLOT));
  return units;
}
