// AssemblyScript, compiled to WebAssembly (SIMD) by scripts/build-kernels.mjs; the engine
// loads it from src/kernels/attention.wasm.ts (generated, committed) and runs it on tfjs-wasm's
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
 *   k, v    [B, KV, S, D]     each KV head's keys and values (S columns)
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
        const keys = k + <usize>g * <usize>S * rowBytes;
        const values = v + <usize>g * <usize>S * rowBytes;
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
 * The gradient of attention for a training step: given dO, the gradient of the output (laid out
 * as out), the gradients dq (as q) and dk, dv (as k and v; overwritten, not added to). Each
 * token's softmax weights P are recomputed from q and k (passes 1 and 2 above), as
 * FlashAttention's backward pass does, rather than kept from the forward pass. For each token,
 * query head i and visible column j, with p_j its weight:
 *
 *   dP_j = dO_i . v_j      dS_j = p_j (dP_j - sum_j' p_j' dP_j')
 *   dq_i = sum_j dS_j k_j  dk_j += dS_j q_i   dv_j += p_j dO_i
 *
 * weights is scratch of [G + 1, S]: the G heads' weights, then one row of dS. Columns that the
 * mask hides (padding, the causal future) have p_j = 0 and get nothing.
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
  weights: usize,
  B: i32,
  KV: i32,
  G: i32,
  T: i32,
  S: i32,
  D: i32,
  maskRows: i32,
): void {
  const rowBytes = (<usize>D) << 2;
  const columnsBytes = (<usize>S) << 2;
  const dS = weights + <usize>G * columnsBytes;
  fill(dk, <usize>B * <usize>KV * <usize>S * rowBytes, 0);
  fill(dv, <usize>B * <usize>KV * <usize>S * rowBytes, 0);
  for (let b = 0; b < B; b++) {
    const maskRows0 = mask + <usize>(maskRows == 1 ? 0 : b) * <usize>T * columnsBytes;
    for (let t = 0; t < T; t++) {
      const maskRow = maskRows0 + <usize>t * columnsBytes;
      const columns = visibleColumns(maskRow, S);
      for (let h = 0; h < KV; h++) {
        const g = b * KV + h;
        const block = <usize>g * <usize>S * rowBytes;
        const head = <usize>(((b * T + t) * KV + h) * G) * rowBytes;
        scores(q + head, k + block, maskRow, weights, G, columns, S, rowBytes);
        for (let i = 0; i < G; i++) {
          const row = weights + <usize>i * columnsBytes;
          const at = head + <usize>i * rowBytes;
          const m = columns == 0 ? <f32>-Infinity : maxOf(row, columns);
          if (m == -Infinity) {
            fill(dq + at, rowBytes, 0);
            continue;
          }
          scale(row, columns, 1 / softmaxWeights(row, columns, m));
          let weighted: f32 = 0;
          for (let j = 0; j < columns; j++) {
            const p = load<f32>(row + ((<usize>j) << 2));
            const dP: f32 = p == 0 ? 0 : dot(dO + at, v + block + <usize>j * rowBytes, rowBytes);
            store<f32>(dS + ((<usize>j) << 2), dP);
            weighted += p * dP;
          }
          for (let j = 0; j < columns; j++) {
            const p = load<f32>(row + ((<usize>j) << 2));
            if (p == 0) {
              store<f32>(dS + ((<usize>j) << 2), 0);
              continue;
            }
            const ds = p * (load<f32>(dS + ((<usize>j) << 2)) - weighted);
            store<f32>(dS + ((<usize>j) << 2), ds);
            addScaled(dk + block + <usize>j * rowBytes, q + at, ds, rowBytes);
            addScaled(dv + block + <usize>j * rowBytes, dO + at, p, rowBytes);
          }
          weightedSum(dq + at, k + block, dS, columns, rowBytes, 1);
        }
      }
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

/** y += c x over `bytes` bytes of float32 (a multiple of 16). */
function addScaled(y: usize, x: usize, c: f32, bytes: usize): void {
  const cc = f32x4.splat(c);
  for (let d: usize = 0; d < bytes; d += 16) v128.store(y + d, f32x4.add(v128.load(y + d), f32x4.mul(cc, v128.load(x + d))));
}
