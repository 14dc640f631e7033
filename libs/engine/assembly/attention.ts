// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/attention.wasm.ts (generated at build) and runs it on tfjs-wasm's
// own memory, which it imports: it reads the input tensors and writes the output tensor where
// tfjs keeps them, without copying. Decoding (src/kernels/decode-attention.ts, one new token
// per sequence) and prompts (src/kernels/prompt-attention.ts, T new tokens) run the same code;
// a training step's forward pass runs it too, and its backward pass attentionBackward.
//
// Nothing here may use static data (lookup tables, strings): a data segment would be
// written into tfjs's heap when the module is instantiated. That is why exp is computed
// by a polynomial (shared/exp.ts) instead of Mathf.exp, whose tables live in a data segment.

import { expf, expf4, maxOf } from './shared/exp';

/** An additive mask value below this marks a column the query must not see (KVCache's MASKED is -1e9). */
const HIDDEN: f32 = -1e8;

/**
 * softmax(q k^T + mask) v for T new tokens per sequence, against every key and value of that
 * sequence (the cached ones and the new ones). Grouped-query layout, as in model/llama.ts,
 * with the queries and the output token-major, as the projections make and take them:
 *
 *   q       [B, T, KV, G, D]  each token's G query heads per KV head (already scaled by 1/sqrt(D))
 *   k, v    [B, KV, stride, D] each KV head's keys and values: the first S of its `stride`
 *                             columns (a KV cache holds spare columns to append to in place)
 *   mask    [maskRows, T, S]  additive mask per sequence (maskRows = B) or shared by all (1):
 *                             0 to attend, MASKED for padding and the causal future
 *   weights [G, S]            scratch: one token's scores, then its softmax weights
 *   out     [B, T, KV, G, D]
 *
 * D must be a multiple of 4 (one f32x4 lane group per 4 dimensions). Decoding is T = 1.
 *
 * For each token and KV head, the textbook softmax in three passes over the columns, each a
 * tight loop:
 *   1. scores: s_j = q . k_j + mask_j for the G heads at once (each key is read once per
 *      group), with four accumulators so that the additions do not wait on each other;
 *   2. weights: p_j = exp(s_j - max_j s_j), four at a time, and their sum l;
 *   3. output: out = (sum_j p_j v_j) / l, sixteen dimensions at a time held in registers.
 * Masked columns get weight 0: their score is -Infinity, and exp of it is 0. The columns after
 * a token's last visible one (a prompt's causal future) are not visited at all, which halves a
 * prompt's work; they would only add zeros. Compared with one pass and an online softmax,
 * nothing is rescaled as the maximum grows, and no accumulator goes through memory at every
 * column.
 */
export function attention(
  q: usize,
  k: usize,
  v: usize,
  mask: usize,
  weights: usize,
  out: usize,
  B: i32,
  KV: i32,
  G: i32,
  T: i32,
  S: i32,
  D: i32,
  maskRows: i32,
  stride: i32,
): void {
  const rowBytes = (<usize>D) << 2;
  const columnsBytes = (<usize>S) << 2;
  for (let b = 0; b < B; b++) {
    const maskRows0 = mask + <usize>(maskRows == 1 ? 0 : b) * <usize>T * columnsBytes;
    for (let t = 0; t < T; t++) {
      const maskRow = maskRows0 + <usize>t * columnsBytes;
      const columns = visibleColumns(maskRow, S);
      for (let h = 0; h < KV; h++) {
        const g = b * KV + h;
        const keys = k + <usize>g * <usize>stride * rowBytes;
        const values = v + <usize>g * <usize>stride * rowBytes;
        const queries = q + <usize>(((b * T + t) * KV + h) * G) * rowBytes;
        const outputs = out + <usize>(((b * T + t) * KV + h) * G) * rowBytes;
        scores(queries, keys, maskRow, weights, G, columns, S, rowBytes);
        for (let i = 0; i < G; i++) {
          const row = weights + <usize>i * columnsBytes;
          const acc = outputs + <usize>i * rowBytes;
          const m = columns == 0 ? <f32>-Infinity : maxOf(row, columns);
          // Every column masked (never so in decoding: a row always sees its newest token): zeros.
          if (m == -Infinity) {
            fill(acc, rowBytes, 0);
            continue;
          }
          const l = softmaxWeights(row, columns, m);
          weightedSum(acc, values, row, columns, rowBytes, 1 / l);
        }
      }
    }
  }
}

/**
 * attention for T > 1 new tokens per sequence (a prompt, a training step's forward pass), in
 * register tiles: the same inputs (D a multiple of 8), but the keys transposed by
 * transposeKeys first (kT [B, KV, D, S8], S8 = S rounded up to a multiple of 8: 8 keys'
 * dimension d is one contiguous pair of vectors), and scratch of [4, S8] floats per thread.
 * Per sequence and KV head, the T G query rows (token by token, each token's G heads side by
 * side) are taken 4 at a time:
 *   1. scores of the 4 rows against 8 keys at a time in 8 accumulators, one multiply-add per
 *      row, key and dimension;
 *   2. each row's softmax weights (passes 1 and 2 of attention above, its mask applied);
 *   3. out for the 4 rows, 8 dimensions at a time, over the keys any of them sees.
 * Multiply-adds are fused (relaxed SIMD), as in f32 products. A tile's rows may belong to two
 * tokens: columns past a row's own last visible one weigh 0 for it. Rows past the last repeat
 * it and are not stored. The result is attention's to float32 rounding, not to the bit:
 * decoding (T = 1) keeps attention's dot products. Hidden columns' values are multiplied by a
 * weight of 0 rather than skipped, so they must be finite (every value in a KV cache is).
 *
 * The tiles are numbered sequence by sequence, KV head by KV head (promptAttentionTiles gives
 * their count), and a call computes tiles [tileFrom, tileTo): each tile's rows are computed
 * alone, so threads can each take a range (src/kernels/matmul-threads.ts) and the result is
 * the same bits however the tiles are divided. Thread `thread` uses the thread-th block of
 * scratch; on one thread, thread 0 and every tile.
 */
export function promptAttention(
  q: usize,
  kT: usize,
  v: usize,
  mask: usize,
  scratch: usize,
  out: usize,
  B: i32,
  KV: i32,
  G: i32,
  T: i32,
  S: i32,
  D: i32,
  maskRows: i32,
  stride: i32,
  tileFrom: i32,
  tileTo: i32,
  thread: i32,
): void {
  const rowBytes = (<usize>D) << 2;
  const columnsBytes = (<usize>S) << 2;
  const S8 = (S + 7) & ~7;
  const scoreBytes = (<usize>S8) << 2;
  const own = scratch + <usize>thread * 4 * scoreBytes;
  const rows = T * G;
  const tiles = (rows + 3) >> 2;
  for (let tile = tileFrom; tile < tileTo; tile++) {
    // Tile `tile` is rows r0..r0 + 3 of KV head h of sequence b.
    const g = tile / tiles;
    const b = g / KV, h = g % KV;
    const r0 = (tile % tiles) << 2;
    const keys = kT + <usize>g * <usize>D * scoreBytes;
    const values = v + <usize>g * <usize>stride * rowBytes;
    const maskRows0 = mask + <usize>(maskRows == 1 ? 0 : b) * <usize>T * columnsBytes;
    // Row r of this head: token r / G, head r % G.
    const first = <usize>((b * T * KV + h) * G) * rowBytes;
    const r1 = min(r0 + 1, rows - 1), r2 = min(r0 + 2, rows - 1), r3 = min(r0 + 3, rows - 1);
    const at0 = queryRow(first, r0, G, KV, rowBytes), at1 = queryRow(first, r1, G, KV, rowBytes);
    const at2 = queryRow(first, r2, G, KV, rowBytes), at3 = queryRow(first, r3, G, KV, rowBytes);
    const m0 = maskRows0 + <usize>(r0 / G) * columnsBytes, m1 = maskRows0 + <usize>(r1 / G) * columnsBytes;
    const m2 = maskRows0 + <usize>(r2 / G) * columnsBytes, m3 = maskRows0 + <usize>(r3 / G) * columnsBytes;
    const n0 = visibleColumns(m0, S), n1 = visibleColumns(m1, S), n2 = visibleColumns(m2, S), n3 = visibleColumns(m3, S);
    const cols = max(max(n0, n1), max(n2, n3));
    const cols8 = (cols + 7) & ~7;
    tileScores(q + at0, q + at1, q + at2, q + at3, keys, own, scoreBytes, cols8, D);
    const c0 = maskedSoftmax(own, m0, n0, cols8);
    const c1 = maskedSoftmax(own + scoreBytes, m1, n1, cols8);
    const c2 = maskedSoftmax(own + 2 * scoreBytes, m2, n2, cols8);
    const c3 = maskedSoftmax(own + 3 * scoreBytes, m3, n3, cols8);
    const stored = min(rows - r0, 4);
    tileOutputs(values, own, scoreBytes, cols, D, out + at0, out + at1, out + at2, out + at3, c0, c1, c2, c3, stored);
  }
}

/** How many tiles promptAttention numbers for these shapes: 4 query rows each, per sequence and KV head. */
export function promptAttentionTiles(B: i32, KV: i32, G: i32, T: i32): i32 {
  return B * KV * ((T * G + 3) >> 2);
}

/**
 * kT[g][d][s] = k[g][s][d] for each of `heads` heads (k [heads, stride, D], of which the first
 * S columns count), kT [heads, D, S8] with S8 = S rounded up to a multiple of 8 and columns
 * S..S8 zero: the keys as promptAttention's tiles read them, each head transposed once for all
 * the tiles (and threads) that read it.
 */
export function transposeKeys(k: usize, kT: usize, heads: i32, S: i32, stride: i32, D: i32): void {
  const S8 = (S + 7) & ~7;
  const rowBytes = (<usize>S8) << 2;
  for (let g = 0; g < heads; g++) {
    const keys = k + <usize>g * <usize>stride * ((<usize>D) << 2);
    const head = kT + <usize>g * <usize>D * rowBytes;
    for (let s = 0; s < S; s++) {
      for (let d = 0; d < D; d++) store<f32>(head + <usize>d * rowBytes + ((<usize>s) << 2), load<f32>(keys + ((<usize>(s * D + d)) << 2)));
    }
    for (let d = 0; d < D; d++) {
      for (let s = S; s < S8; s++) store<f32>(head + <usize>d * rowBytes + ((<usize>s) << 2), 0);
    }
  }
}

/** scores[i][j] = q_i . k_j for the 4 query rows and the first cols8 keys (a multiple of 8); rows scoreBytes apart. */
function tileScores(q0: usize, q1: usize, q2: usize, q3: usize, kT: usize, scores: usize, scoreBytes: usize, cols8: i32, D: i32): void {
  const kRow = scoreBytes;
  for (let j: usize = 0; j < (<usize>cols8) << 2; j += 32) {
    let a0 = f32x4.splat(0), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0, d1 = a0;
    let key = kT + j;
    for (let d: usize = 0; d < (<usize>D) << 2; d += 4, key += kRow) {
      const k0 = v128.load(key);
      const k1 = v128.load(key, 16);
      let s = v128.load32_splat(q0 + d);
      a0 = f32x4.relaxed_madd(s, k0, a0);
      a1 = f32x4.relaxed_madd(s, k1, a1);
      s = v128.load32_splat(q1 + d);
      b0 = f32x4.relaxed_madd(s, k0, b0);
      b1 = f32x4.relaxed_madd(s, k1, b1);
      s = v128.load32_splat(q2 + d);
      c0 = f32x4.relaxed_madd(s, k0, c0);
      c1 = f32x4.relaxed_madd(s, k1, c1);
      s = v128.load32_splat(q3 + d);
      d0 = f32x4.relaxed_madd(s, k0, d0);
      d1 = f32x4.relaxed_madd(s, k1, d1);
    }
    v128.store(scores + j, a0);
    v128.store(scores + j, a1, 16);
    v128.store(scores + scoreBytes + j, b0);
    v128.store(scores + scoreBytes + j, b1, 16);
    v128.store(scores + 2 * scoreBytes + j, c0);
    v128.store(scores + 2 * scoreBytes + j, c1, 16);
    v128.store(scores + 3 * scoreBytes + j, d0);
    v128.store(scores + 3 * scoreBytes + j, d1, 16);
  }
}

/**
 * One row's scores to its softmax weights, unnormalised, in place over cols8 columns: the mask
 * added, -Infinity (weight 0) where it hides the column or past the row's `visible` columns.
 * Returns 1 / the weights' sum, or 0 when the row sees no column (its weights then all 0).
 */
function maskedSoftmax(row: usize, maskRow: usize, visible: i32, cols8: i32): f32 {
  for (let j = 0; j < cols8; j++) {
    const at = (<usize>j) << 2;
    const bias = j < visible ? load<f32>(maskRow + at) : <f32>-Infinity;
    store<f32>(row + at, bias < HIDDEN ? <f32>-Infinity : load<f32>(row + at) + bias);
  }
  const m = visible == 0 ? <f32>-Infinity : maxOf(row, visible);
  if (m == -Infinity) {
    fill(row, (<usize>cols8) << 2, 0);
    return 0;
  }
  return 1 / softmaxWeights(row, cols8, m);
}

/**
 * out_i = c_i sum_j p[i][j] v_j for the 4 rows (weights p in rows scoreBytes apart) over the
 * first cols keys, 8 dimensions at a time (then 4, where D is not a multiple of 8); only the
 * first `stored` rows are written.
 */
function tileOutputs(values: usize, p: usize, scoreBytes: usize, cols: i32, D: i32, o0: usize, o1: usize, o2: usize, o3: usize, c0: f32, c1: f32, c2: f32, c3: f32, stored: i32): void {
  const rowBytes = (<usize>D) << 2;
  let d: usize = 0;
  for (; d + 32 <= rowBytes; d += 32) {
    let a0 = f32x4.splat(0), a1 = a0, b0 = a0, b1 = a0, e0 = a0, e1 = a0, f0 = a0, f1 = a0;
    let value = values + d;
    for (let j: usize = 0; j < (<usize>cols) << 2; j += 4, value += rowBytes) {
      const v0 = v128.load(value);
      const v1 = v128.load(value, 16);
      let s = v128.load32_splat(p + j);
      a0 = f32x4.relaxed_madd(s, v0, a0);
      a1 = f32x4.relaxed_madd(s, v1, a1);
      s = v128.load32_splat(p + scoreBytes + j);
      b0 = f32x4.relaxed_madd(s, v0, b0);
      b1 = f32x4.relaxed_madd(s, v1, b1);
      s = v128.load32_splat(p + 2 * scoreBytes + j);
      e0 = f32x4.relaxed_madd(s, v0, e0);
      e1 = f32x4.relaxed_madd(s, v1, e1);
      s = v128.load32_splat(p + 3 * scoreBytes + j);
      f0 = f32x4.relaxed_madd(s, v0, f0);
      f1 = f32x4.relaxed_madd(s, v1, f1);
    }
    storeScaled(o0 + d, a0, a1, c0);
    if (stored > 1) storeScaled(o1 + d, b0, b1, c1);
    if (stored > 2) storeScaled(o2 + d, e0, e1, c2);
    if (stored > 3) storeScaled(o3 + d, f0, f1, c3);
  }
  for (; d < rowBytes; d += 16) {
    let a = f32x4.splat(0), b = a, e = a, f = a;
    let value = values + d;
    for (let j: usize = 0; j < (<usize>cols) << 2; j += 4, value += rowBytes) {
      const v0 = v128.load(value);
      a = f32x4.relaxed_madd(v128.load32_splat(p + j), v0, a);
      b = f32x4.relaxed_madd(v128.load32_splat(p + scoreBytes + j), v0, b);
      e = f32x4.relaxed_madd(v128.load32_splat(p + 2 * scoreBytes + j), v0, e);
      f = f32x4.relaxed_madd(v128.load32_splat(p + 3 * scoreBytes + j), v0, f);
    }
    v128.store(o0 + d, f32x4.mul(a, f32x4.splat(c0)));
    if (stored > 1) v128.store(o1 + d, f32x4.mul(b, f32x4.splat(c1)));
    if (stored > 2) v128.store(o2 + d, f32x4.mul(e, f32x4.splat(c2)));
    if (stored > 3) v128.store(o3 + d, f32x4.mul(f, f32x4.splat(c3)));
  }
}

@inline function storeScaled(to: usize, x0: v128, x1: v128, c: f32): void {
  const cc = f32x4.splat(c);
  v128.store(to, f32x4.mul(x0, cc));
  v128.store(to, f32x4.mul(x1, cc), 16);
}

/**
 * The gradient of attention for a training step: given dO, the gradient of the output (laid out
 * as out), the gradients dq (as q) and dk, dv (as k and v, exactly S columns; overwritten, not
 * added to). Each query row's softmax weights P are recomputed from q and k, as
 * FlashAttention's backward pass does, rather than kept from the forward pass. For each query
 * row i and visible column j, with p_j its weight:
 *
 *   dP_j = dO_i . v_j      dS_j = p_j (dP_j - sum_j' p_j' dP_j')
 *   dq_i = sum_j dS_j k_j  dk_j += dS_j q_i   dv_j += p_j dO_i
 *
 * Per sequence and KV head, the head's keys and values are transposed once into scratch (kT,
 * vT [D, S8] as transposeKeys lays them out), then its T G query rows are taken 4 at a time in
 * promptAttention's register tiles:
 *   1. P: the 4 rows' scores against kT (tileScores), each row's softmax weights normalised;
 *   2. dP: the 4 rows of dO against vT, the same tile;
 *   3. dS from P and dP, row by row (softmaxGradient);
 *   4. dq for the 4 rows: dS against k's rows (tileOutputs);
 *   5. dk and dv: every visible key's row gets the 4 rows' dS q and P dO (tileKeyGradients),
 *      the 4 query rows in order.
 * Multiply-adds are fused, as in the forward tiles. Columns that the mask hides (padding, the
 * causal future) have p_j = 0 and add nothing; rows past the last repeat it, weigh 0 in 5 and
 * are not stored. At 64-dimension heads this runs 2.2-2.6 times as fast as one dot product
 * per query row and key with dk and dv updated through memory key by key (docs/benchmarks.md,
 * "Attention kernel").
 *
 * scratch is attentionBackwardScratch(S, D) floats per thread. A call computes the KV heads
 * [headFrom, headTo) of the B KV heads, numbered sequence by sequence: each head's dk and dv
 * are summed over its query rows in order, and nothing else writes them, so threads can each
 * take a range (src/kernels/matmul-threads.ts) and the result is the same bits however the
 * heads are divided. Thread `thread` uses the thread-th block of scratch; on one thread,
 * thread 0 and every head.
 */
export function attentionBackward(
  q: usize,
  k: usize,
  v: usize,
  mask: usize,
  dO: usize,
  dq: usize,
  dk: usize,
  dv: usize,
  scratch: usize,
  B: i32,
  KV: i32,
  G: i32,
  T: i32,
  S: i32,
  D: i32,
  maskRows: i32,
  headFrom: i32,
  headTo: i32,
  thread: i32,
): void {
  const rowBytes = (<usize>D) << 2;
  const columnsBytes = (<usize>S) << 2;
  const scoreBytes = (<usize>((S + 7) & ~7)) << 2;
  const kT = scratch + <usize>thread * ((<usize>attentionBackwardScratch(S, D)) << 2);
  const vT = kT + <usize>D * scoreBytes;
  const P = vT + <usize>D * scoreBytes;
  const dS = P + 4 * scoreBytes;
  const headBytes = <usize>S * rowBytes;
  const rows = T * G;
  for (let g = headFrom; g < headTo; g++) {
    const b = g / KV, h = g % KV;
    const block = <usize>g * headBytes;
    transposeKeys(k + block, kT, 1, S, S, D);
    transposeKeys(v + block, vT, 1, S, S, D);
    fill(dk + block, headBytes, 0);
    fill(dv + block, headBytes, 0);
    const maskRows0 = mask + <usize>(maskRows == 1 ? 0 : b) * <usize>T * columnsBytes;
    const first = <usize>((b * T * KV + h) * G) * rowBytes;
    for (let r0 = 0; r0 < rows; r0 += 4) {
      const r1 = min(r0 + 1, rows - 1), r2 = min(r0 + 2, rows - 1), r3 = min(r0 + 3, rows - 1);
      const at0 = queryRow(first, r0, G, KV, rowBytes), at1 = queryRow(first, r1, G, KV, rowBytes);
      const at2 = queryRow(first, r2, G, KV, rowBytes), at3 = queryRow(first, r3, G, KV, rowBytes);
      const m0 = maskRows0 + <usize>(r0 / G) * columnsBytes, m1 = maskRows0 + <usize>(r1 / G) * columnsBytes;
      const m2 = maskRows0 + <usize>(r2 / G) * columnsBytes, m3 = maskRows0 + <usize>(r3 / G) * columnsBytes;
      const n0 = visibleColumns(m0, S), n1 = visibleColumns(m1, S), n2 = visibleColumns(m2, S), n3 = visibleColumns(m3, S);
      const cols = max(max(n0, n1), max(n2, n3));
      const cols8 = (cols + 7) & ~7;
      const stored = min(rows - r0, 4);
      tileScores(q + at0, q + at1, q + at2, q + at3, kT, P, scoreBytes, cols8, D);
      scale(P, cols8, maskedSoftmax(P, m0, n0, cols8));
      scale(P + scoreBytes, cols8, maskedSoftmax(P + scoreBytes, m1, n1, cols8));
      scale(P + 2 * scoreBytes, cols8, maskedSoftmax(P + 2 * scoreBytes, m2, n2, cols8));
      scale(P + 3 * scoreBytes, cols8, maskedSoftmax(P + 3 * scoreBytes, m3, n3, cols8));
      tileScores(dO + at0, dO + at1, dO + at2, dO + at3, vT, dS, scoreBytes, cols8, D);
      for (let i = 0; i < 4; i++) {
        const at = <usize>i * scoreBytes;
        if (i < stored) softmaxGradient(P + at, dS + at, cols8);
        else {
          fill(P + at, scoreBytes, 0);
          fill(dS + at, scoreBytes, 0);
        }
      }
      tileOutputs(k + block, dS, scoreBytes, cols, D, dq + at0, dq + at1, dq + at2, dq + at3, 1, 1, 1, 1, stored);
      tileKeyGradients(dS, scoreBytes, q + at0, q + at1, q + at2, q + at3, dk + block, cols, D);
      tileKeyGradients(P, scoreBytes, dO + at0, dO + at1, dO + at2, dO + at3, dv + block, cols, D);
    }
  }
}

/** Floats of scratch attentionBackward needs per thread: kT and vT [D, S8], then P and dS for a tile [4, S8] each. */
export function attentionBackwardScratch(S: i32, D: i32): i32 {
  return (2 * D + 8) * ((S + 7) & ~7);
}

/** Byte offset of query row r of a KV head (token r / G, head r % G) whose first row is at `first`. */
@inline function queryRow(first: usize, r: i32, G: i32, KV: i32, rowBytes: usize): usize {
  const t = r / G;
  return first + <usize>(t * KV * G + r - t * G) * rowBytes;
}

/** ds_j = p_j (dP_j - sum_j' p_j' dP_j') in place of dP over cols8 columns (a multiple of 8). */
function softmaxGradient(p: usize, ds: usize, cols8: i32): void {
  const bytes = (<usize>cols8) << 2;
  let a = f32x4.splat(0), b = a;
  for (let j: usize = 0; j < bytes; j += 32) {
    a = f32x4.relaxed_madd(v128.load(p + j), v128.load(ds + j), a);
    b = f32x4.relaxed_madd(v128.load(p + j, 16), v128.load(ds + j, 16), b);
  }
  const weighted = f32x4.splat(horizontalSum(f32x4.add(a, b)));
  for (let j: usize = 0; j < bytes; j += 16) v128.store(ds + j, f32x4.mul(v128.load(p + j), f32x4.sub(v128.load(ds + j), weighted)));
}

/**
 * out_j += sum_i w[i][j] x_i for every key j < cols, over the 4 rows x0..x3 (D floats each) with
 * weights w in rows scoreBytes apart: out_j is the j-th row of D floats. Each output is one chain
 * of multiply-adds, rows 0 to 3 in order; x's 8 dimensions in registers, the keys' rows streamed.
 */
function tileKeyGradients(w: usize, scoreBytes: usize, x0: usize, x1: usize, x2: usize, x3: usize, out: usize, cols: i32, D: i32): void {
  const rowBytes = (<usize>D) << 2;
  const end = (<usize>cols) << 2;
  let d: usize = 0;
  for (; d + 32 <= rowBytes; d += 32) {
    const a0 = v128.load(x0 + d), a1 = v128.load(x0 + d, 16), b0 = v128.load(x1 + d), b1 = v128.load(x1 + d, 16);
    const c0 = v128.load(x2 + d), c1 = v128.load(x2 + d, 16), e0 = v128.load(x3 + d), e1 = v128.load(x3 + d, 16);
    let o = out + d;
    for (let j: usize = 0; j < end; j += 4, o += rowBytes) {
      let s = v128.load32_splat(w + j);
      let y0 = f32x4.relaxed_madd(s, a0, v128.load(o));
      let y1 = f32x4.relaxed_madd(s, a1, v128.load(o, 16));
      s = v128.load32_splat(w + scoreBytes + j);
      y0 = f32x4.relaxed_madd(s, b0, y0);
      y1 = f32x4.relaxed_madd(s, b1, y1);
      s = v128.load32_splat(w + 2 * scoreBytes + j);
      y0 = f32x4.relaxed_madd(s, c0, y0);
      y1 = f32x4.relaxed_madd(s, c1, y1);
      s = v128.load32_splat(w + 3 * scoreBytes + j);
      v128.store(o, f32x4.relaxed_madd(s, e0, y0));
      v128.store(o, f32x4.relaxed_madd(s, e1, y1), 16);
    }
  }
  for (; d < rowBytes; d += 16) {
    const a = v128.load(x0 + d), b = v128.load(x1 + d), c = v128.load(x2 + d), e = v128.load(x3 + d);
    let o = out + d;
    for (let j: usize = 0; j < end; j += 4, o += rowBytes) {
      let y = f32x4.relaxed_madd(v128.load32_splat(w + j), a, v128.load(o));
      y = f32x4.relaxed_madd(v128.load32_splat(w + scoreBytes + j), b, y);
      y = f32x4.relaxed_madd(v128.load32_splat(w + 2 * scoreBytes + j), c, y);
      v128.store(o, f32x4.relaxed_madd(v128.load32_splat(w + 3 * scoreBytes + j), e, y));
    }
  }
}

/** 1 + the last column the mask row lets the query see (0 when it sees none). */
function visibleColumns(maskRow: usize, S: i32): i32 {
  let n = S;
  while (n > 0 && load<f32>(maskRow + ((<usize>(n - 1)) << 2)) < HIDDEN) n--;
  return n;
}

/** Pass 1: weights[i][s] = q_i . k_s + mask_s for the G heads and the first `columns` keys, -Infinity where masked (weights' rows are S floats apart). */
function scores(queries: usize, keys: usize, maskRow: usize, weights: usize, G: i32, columns: i32, S: i32, rowBytes: usize): void {
  const columnsBytes = (<usize>S) << 2;
  for (let s = 0; s < columns; s++) {
    const at = (<usize>s) << 2;
    const bias = load<f32>(maskRow + at);
    const key = keys + <usize>s * rowBytes;
    for (let i = 0; i < G; i++) {
      const score: f32 = bias < HIDDEN ? <f32>-Infinity : dot(queries + <usize>i * rowBytes, key, rowBytes) + bias;
      store<f32>(weights + <usize>i * columnsBytes + at, score);
    }
  }
}

/** Pass 2: p_s = exp(s_s - m) in place; returns their sum. */
function softmaxWeights(row: usize, S: i32, m: f32): f32 {
  const mm = f32x4.splat(m);
  let sum = f32x4.splat(0);
  const bytes = (<usize>S) << 2;
  let at: usize = 0;
  for (; at + 16 <= bytes; at += 16) {
    const p = expf4(f32x4.sub(v128.load(row + at), mm));
    v128.store(row + at, p);
    sum = f32x4.add(sum, p);
  }
  let l = horizontalSum(sum);
  for (; at < bytes; at += 4) {
    const p = expf(load<f32>(row + at) - m);
    store<f32>(row + at, p);
    l += p;
  }
  return l;
}

/** Pass 3: acc = c * sum_s p_s v_s, sixteen dimensions (four registers) at a time where D allows. */
function weightedSum(acc: usize, values: usize, row: usize, S: i32, rowBytes: usize, c: f32): void {
  const cc = f32x4.splat(c);
  let d: usize = 0;
  for (; d + 64 <= rowBytes; d += 64) {
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let a2 = f32x4.splat(0);
    let a3 = f32x4.splat(0);
    let value = values + d;
    for (let s = 0; s < S; s++, value += rowBytes) {
      const p = load<f32>(row + ((<usize>s) << 2));
      if (p == 0) continue;
      const pp = f32x4.splat(p);
      a0 = f32x4.add(a0, f32x4.mul(pp, v128.load(value)));
      a1 = f32x4.add(a1, f32x4.mul(pp, v128.load(value + 16)));
      a2 = f32x4.add(a2, f32x4.mul(pp, v128.load(value + 32)));
      a3 = f32x4.add(a3, f32x4.mul(pp, v128.load(value + 48)));
    }
    v128.store(acc + d, f32x4.mul(a0, cc));
    v128.store(acc + d + 16, f32x4.mul(a1, cc));
    v128.store(acc + d + 32, f32x4.mul(a2, cc));
    v128.store(acc + d + 48, f32x4.mul(a3, cc));
  }
  for (; d < rowBytes; d += 16) {
    let a = f32x4.splat(0);
    let value = values + d;
    for (let s = 0; s < S; s++, value += rowBytes) {
      const p = load<f32>(row + ((<usize>s) << 2));
      if (p != 0) a = f32x4.add(a, f32x4.mul(f32x4.splat(p), v128.load(value)));
    }
    v128.store(acc + d, f32x4.mul(a, cc));
  }
}

/** sum_d a[d] * b[d] over `bytes` bytes of float32, with four independent accumulators. */
function dot(a: usize, b: usize, bytes: usize): f32 {
  let s0 = f32x4.splat(0);
  let s1 = f32x4.splat(0);
  let s2 = f32x4.splat(0);
  let s3 = f32x4.splat(0);
  let d: usize = 0;
  for (; d + 64 <= bytes; d += 64) {
    s0 = f32x4.add(s0, f32x4.mul(v128.load(a + d), v128.load(b + d)));
    s1 = f32x4.add(s1, f32x4.mul(v128.load(a + d + 16), v128.load(b + d + 16)));
    s2 = f32x4.add(s2, f32x4.mul(v128.load(a + d + 32), v128.load(b + d + 32)));
    s3 = f32x4.add(s3, f32x4.mul(v128.load(a + d + 48), v128.load(b + d + 48)));
  }
  for (; d < bytes; d += 16) s0 = f32x4.add(s0, f32x4.mul(v128.load(a + d), v128.load(b + d)));
  return horizontalSum(f32x4.add(f32x4.add(s0, s1), f32x4.add(s2, s3)));
}

function horizontalSum(x: v128): f32 {
  return f32x4.extract_lane(x, 0) + f32x4.extract_lane(x, 1) + f32x4.extract_lane(x, 2) + f32x4.extract_lane(x, 3);
}

function fill(x: usize, bytes: usize, c: f32): void {
  const cc = f32x4.splat(c);
  for (let d: usize = 0; d < bytes; d += 16) v128.store(x + d, cc);
}

/** x[0..n) *= c. */
function scale(x: usize, n: i32, c: f32): void {
  const cc = f32x4.splat(c);
  const bytes = (<usize>n) << 2;
  let at: usize = 0;
  for (; at + 16 <= bytes; at += 16) v128.store(x + at, f32x4.mul(v128.load(x + at), cc));
  for (; at < bytes; at += 4) store<f32>(x + at, load<f32>(x + at) * c);
}
