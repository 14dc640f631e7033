import * as tf from '@tensorflow/tfjs-core';
import { decodeAttention } from '../kernels/decode-attention';
import { promptAttention, promptAttentionGradient, promptAttentionSaving, promptAttentionWithGradient } from '../kernels/prompt-attention';
import { ownColumns } from '../model/kv-cache';
import { outputSlot } from './kept-outputs';
import { savedActivations } from './saved-activations';

/**
 * softmax(q k^T + mask) v for grouped-query attention, by the implementation that fits the
 * backend and shape at hand: the model (model/llama.ts) says what attention is, this file how
 * it is computed. q is token-major as the projection makes it, [B*T, H*D] (T new tokens per
 * row, the G = H/KV query heads sharing each KV head side by side), k and v [B, KV, S, D] (the
 * cache included, and after the mask's S columns possibly spare ones that do not count); the
 * result has q's shape, ready for the output projection.
 *
 * On wasm, one WebAssembly kernel reads q and writes the result in that layout
 * (kernels/decode-attention for decoding, kernels/prompt-attention for T tokens: the same
 * kernel), and under a gradient tape a second kernel gives its gradient. On webgpu, outside a
 * tape, a decoding step runs a WGSL program (kernels/decode-attention.webgpu.ts), and T tokens
 * the same kernel names as wasm's in WGSL (kernels/prompt-attention.webgpu.ts), their gradient
 * too. Elsewhere tfjs ops on the
 * heads-first layout [B*KV, G*T, D] (the G heads of a KV head one query row block each, each KV
 * head read once), with a custom gradient of their own (attendOneHead).
 *
 * In an activation-checkpointed step (ops/kept-outputs.ts) the first pass keeps the result, and
 * the recompute's gradient kernel stands on the kept result instead of computing it again; its
 * gradient is computed all the same. In a pass that saves activations for an explicit backward
 * (ops/saved-activations.ts) it saves q, k, v, the mask and the result, which attendBackward
 * reads, and on webgpu each query's log-sum-exp, which the forward program finds anyway and the
 * backward's would otherwise find again.
 */
export function attend(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, dims: { B: number; H: number; T: number; cached: boolean }): tf.Tensor2D {
  const slot = outputSlot();
  const saved = savedActivations();
  const withStats = saved && !dims.cached ? promptAttentionSaving(q, k, v, mask, dims.T) : null;
  const heads = withStats?.out ?? attendBy(q, k, v, mask, dims, slot?.take() ?? null);
  slot?.keep(heads);
  saved?.saveAttention({ q, k, v, mask, out: heads, stats: withStats?.stats ?? null, B: dims.B, H: dims.H, T: dims.T });
  return heads;
}

/**
 * d loss / d q, k, v of attend (uncached: every key is one of the T tokens) from its result's
 * gradient dO, laid out as q, k and v are. With P = softmax(q k^T + mask) per head (q carries
 * the scale) and O = P v, as FlashAttention's backward pass computes it:
 *
 *   dV = P^T dO,   dP = dO v^T,   dS = P * (dP - rowsum(dO * O)),   dq = dS k,   dk = dS^T q
 *
 * (rowsum(dP * P) = rowsum(dO * O), since O = P v). P is recomputed from q and k, not kept:
 * [heads, T, S] per layer would outweigh every other saved activation at training's lengths.
 * Grouped-query attention sums dk and dv over the G query heads of each KV head, which the
 * heads-first layout [B*KV, G*T, D] does in the products. On wasm the attention backward
 * kernel (kernels/prompt-attention.ts), on webgpu its WGSL twin; elsewhere tfjs ops, batched over rows and KV heads
 * (rows in chunks where their scores outgrow `maxScores`, BATCHED_SCORES unless a test says).
 */
export function attendBackward(
  saved: { q: tf.Tensor2D; k: tf.Tensor4D; v: tf.Tensor4D; mask: tf.Tensor4D; out: tf.Tensor2D; stats?: tf.Tensor2D | null; B: number; H: number; T: number },
  dO: tf.Tensor2D,
  maxScores = BATCHED_SCORES,
): [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D] {
  const { q, k, v, mask, out, B, H, T } = saved;
  const kernel = promptAttentionGradient(q, k, v, mask, dO, T, saved.stats ?? null);
  if (kernel) return kernel;
  return tf.tidy(() => {
    const [, KV, S, D] = k.shape;
    const G = H / KV;
    const headsFirst = (x: tf.Tensor2D) => tf.reshape(tf.transpose(tf.reshape(x, [B, T, KV, G, D]), [0, 2, 3, 1, 4]), [B * KV, G * T, D]) as tf.Tensor3D;
    const tokenMajor = (x: tf.Tensor3D) => tf.reshape(tf.transpose(tf.reshape(x, [B, KV, G, T, D]), [0, 3, 1, 2, 4]), [B * T, H * D]) as tf.Tensor2D;
    const [qh, dOh, outh] = [headsFirst(q), headsFirst(dO), headsFirst(out)];
    const [kh, vh] = [tf.reshape(k, [B * KV, S, D]), tf.reshape(v, [B * KV, S, D])] as tf.Tensor3D[];
    // Rows of the batch a chunk at a time, so that its [heads, T, S] tensors stay within
    // maxScores (one row's whatever its size): all rows at once for training's usual steps.
    const rowsPerChunk = Math.max(1, Math.floor(maxScores / (H * T * S)));
    const parts: tf.Tensor3D[][] = [];
    for (let b = 0; b < B; b += rowsPerChunk) {
      const n = Math.min(rowsPerChunk, B - b);
      const rows = (x: tf.Tensor3D) => (n === B ? x : (tf.slice(x, [b * KV, 0, 0], [n * KV, -1, -1]) as tf.Tensor3D));
      const m = mask.shape[0] === 1 || n === B ? mask : tf.slice(mask, [b, 0, 0, 0], [n, -1, -1, -1]);
      const [qc, dOc, kc, vc] = [rows(qh), rows(dOh), rows(kh), rows(vh)];
      const scores = tf.reshape(tf.matMul(qc, kc, false, true), [n, H, T, S]);
      const p = tf.reshape(tf.softmax(tf.add(scores, m)), [n * KV, G * T, S]) as tf.Tensor3D;
      const dP = tf.matMul(dOc, vc, false, true);
      const dS = tf.mul(p, tf.sub(dP, tf.sum(tf.mul(dOc, rows(outh)), -1, true))) as tf.Tensor3D;
      parts.push([tf.matMul(dS, kc), tf.matMul(dS, qc, true, false), tf.matMul(p, dOc, true, false)]);
    }
    const [dq, dK, dV] = [0, 1, 2].map((i) => (parts.length === 1 ? parts[0][i] : tf.concat(parts.map((part) => part[i])))) as tf.Tensor3D[];
    return [tokenMajor(dq), tf.reshape(dK, [B, KV, S, D]), tf.reshape(dV, [B, KV, S, D])] as [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D];
  });
}

/** attend, with `kept` (or null) the result an earlier pass computed from the same inputs. */
function attendBy(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, dims: { B: number; H: number; T: number; cached: boolean }, kept: tf.Tensor2D | null): tf.Tensor2D {
  const { B, H, T } = dims;
  const [, KV, , D] = k.shape;
  if (T === 1) {
    const decoded = dims.cached ? decodeAttention(tf.reshape(q, [B * KV, H / KV, D]), k, v, mask) : null;
    if (decoded) return tf.reshape(decoded, [B, H * D]);
  }
  const kernel = tf.engine().isTapeOn() ? promptAttentionWithGradient(q, k, v, mask, T, kept) : promptAttention(q, k, v, mask, T);
  // The ops take only the mask's S columns: a KV cache may hold spare ones after them, which the kernels skip.
  const S = mask.shape[3];
  return kernel ?? attendWithOps(q, ownColumns(k, S), ownColumns(v, S), mask, dims);
}

/** attend with tfjs ops, where no kernel applies. */
export function attendWithOps(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, dims: { B: number; H: number; T: number }): tf.Tensor2D {
  const { B, H, T } = dims;
  const [, KV, S, D] = k.shape;
  const G = H / KV;
  const heads = T === 1 ? tf.reshape(q, [B * KV, G, D]) : tf.reshape(tf.transpose(tf.reshape(q, [B, T, KV, G, D]), [0, 2, 3, 1, 4]), [B * KV, G * T, D]);
  const out = (attendsPerGroup(B * KV, T, H * T * S * B) ? attendPerGroup : attendBatched)(heads as tf.Tensor3D, k, v, mask, [B, H, T, S]);
  return (T === 1 ? tf.reshape(out, [B, H * D]) : tf.reshape(tf.transpose(tf.reshape(out, [B, KV, G, T, D]), [0, 3, 1, 2, 4]), [B * T, H * D])) as tf.Tensor2D;
}

/**
 * With tfjs ops, several new tokens and few rows x KV heads (training's recomputed forward and
 * its gradient) attend one KV head at a time with 2-D matMuls: batched matMuls run a scalar
 * loop on wasm (0.5-1.5 GMAC/s measured here), while plain 2-D ones take XNNPACK's fast path,
 * and so do their gradients (training/gradients). One token per row (decoding off wasm, many
 * small groups) stays batched: per-group splits and concats would cost more dispatches than
 * they save. So does webgpu outside a tape where its WGSL kernel is off (WEBGPU_FUSED_KERNELS)
 * while the `scores` of all heads fit BATCHED_SCORES: a dispatch per op for every head, where
 * per-group attention takes about six per group.
 */
function attendsPerGroup(groups: number, T: number, scores: number): boolean {
  if (tf.getBackend() === 'webgpu' && !tf.engine().isTapeOn() && scores <= BATCHED_SCORES) return false;
  return T >= 2 && (groups <= 8 || T >= 16);
}

/** Most attention scores (floats) a batched attention computes at once on webgpu: 64 MB, within WebGPU's default storage buffer binding size of 128 MB. */
const BATCHED_SCORES = 1 << 24;

/** q [B*KV, G*T, D], k and v [B, KV, S, D] -> heads [B*KV, G*T, D]. */
function attendBatched(q: tf.Tensor3D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, [B, H, T, S]: number[]): tf.Tensor3D {
  const [groups, rows, D] = q.shape;
  const scores = tf.matMul(q, tf.reshape(k, [groups, S, D]), false, true);
  const masked = tf.add(tf.reshape(scores, [B, H, T, S]), mask);
  const probs = tf.reshape(tf.softmax(masked), [groups, rows, S]);
  return tf.matMul(probs, tf.reshape(v, [groups, S, D]));
}

/** Same as attendBatched, one plain 2-D matMul per group (row x KV head). */
function attendPerGroup(q: tf.Tensor3D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, [B, , T, S]: number[]): tf.Tensor3D {
  const [groups, rows, D] = q.shape;
  const split = (x: tf.Tensor, n: number) => (groups === 1 ? [tf.reshape(x, [n, D])] : tf.split(tf.reshape(x, [groups * n, D]), groups, 0)) as tf.Tensor2D[];
  const [qs, ks, vs] = [split(q, rows), split(k, S), split(v, S)];
  // The mask of each row of the batch (or one for all), [1, T, S]: shared by its KV heads.
  const masks = Array.from({ length: mask.shape[0] }, (_, b) => tf.reshape(tf.slice(mask, [b, 0, 0, 0], [1, 1, T, S]), [1, T, S]) as tf.Tensor3D);
  const perRow = groups / B;
  const heads = qs.map((qi, i) => attendOneHead(qi, ks[i], vs[i], masks[masks.length === 1 ? 0 : Math.floor(i / perRow)], rows / T));
  return tf.reshape(heads.length === 1 ? heads[0] : tf.concat(heads, 0), [groups, rows, D]);
}

/** Most attention scores ([query rows, keys] floats) one head computes at once: 16 MB. */
const ATTENTION_TILE = 1 << 22;

/** A block of query rows of one KV head's G*T rows: head g's tokens t .. t+rows-1, or all rows. */
interface QueryTile {
  row: number;
  rows: number;
  t: number;
  whole: boolean;
}

/** The G*T query rows in one tile when their scores are small, else tiles of one head's tokens. */
function queryTiles(G: number, T: number, S: number): QueryTile[] {
  if (G * T * S <= ATTENTION_TILE) return [{ row: 0, rows: G * T, t: 0, whole: true }];
  const n = Math.max(1, Math.floor(ATTENTION_TILE / S));
  const tiles: QueryTile[] = [];
  for (let g = 0; g < G; g++) for (let t = 0; t < T; t += n) tiles.push({ row: g * T + t, rows: Math.min(n, T - t), t, whole: false });
  return tiles;
}

/**
 * softmax(q k^T + mask) v for the G query heads [G*T, D] that share one KV head (k, v [S, D]).
 *
 * Long sequences are taken in tiles of query rows, so that [G*T, S] scores never exist at
 * once, and the gradient keeps only q, k and v and recomputes the probabilities tile by tile,
 * as FlashAttention's backward pass does: with P = softmax(q k^T + mask) and dO the output's
 * gradient, dV = P^T dO, dP = dO v^T, dS = P * (dP - rowsum(dP * P)), dq = dS k, dk = dS^T q
 * (dV and dk summed over tiles). A taped softmax would keep several [G*T, S] tensors per head
 * and layer instead, which for long training sequences is most of the memory of a step.
 */
function attendOneHead(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, mask: tf.Tensor3D, G: number): tf.Tensor2D {
  const [rows, S] = [q.shape[0], k.shape[0]];
  const T = rows / G;
  const tiles = queryTiles(G, T, S);
  /** P of one tile, [tile.rows, S], from the tile's queries. */
  const probabilities = (tile: QueryTile, qTile: tf.Tensor2D, ki: tf.Tensor2D, m: tf.Tensor) => {
    const scores = tf.matMul(qTile, tf.transpose(ki) as tf.Tensor2D);
    const masked = tile.whole ? tf.reshape(tf.add(tf.reshape(scores, [G, T, S]), m), [rows, S]) : tf.add(scores, tf.reshape(tf.slice(m, [0, tile.t, 0], [1, tile.rows, S]), [tile.rows, S]));
    return tf.softmax(masked) as tf.Tensor2D;
  };
  const queriesOf = (tile: QueryTile, x: tf.Tensor2D) => (tile.whole ? x : (tf.slice(x, [tile.row, 0], [tile.rows, -1]) as tf.Tensor2D));
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [qi, ki, vi] = args as tf.Tensor2D[];
    // The mask is saved too: it belongs to the forward pass's scope, gone by the backward pass.
    (args[3] as tf.GradSaveFunc)([qi, ki, vi, mask]);
    return {
      // Each tile in a scope of its own: one tile's probabilities exist at a time.
      value: tf.tidy(() => {
        const outs = tiles.map((tile) => tf.tidy(() => tf.matMul(probabilities(tile, queriesOf(tile, qi), ki, mask), vi)));
        return outs.length === 1 ? outs[0] : tf.concat(outs, 0);
      }),
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
        const [qs, ks, vs, m] = saved as tf.Tensor2D[];
        const dQ: tf.Tensor2D[] = [];
        let dK: tf.Tensor2D | null = null;
        let dV: tf.Tensor2D | null = null;
        const accumulate = (sum: tf.Tensor2D | null, part: tf.Tensor2D) => {
          if (!sum) return part;
          const next = tf.add(sum, part) as tf.Tensor2D;
          sum.dispose();
          part.dispose();
          return next;
        };
        for (const tile of tiles) {
          const [dq, dk, dv] = tf.tidy(() => {
            const qTile = queriesOf(tile, qs);
            const dO = queriesOf(tile, dy as tf.Tensor2D);
            const p = probabilities(tile, qTile, ks, m);
            const dP = tf.matMul(dO, tf.transpose(vs) as tf.Tensor2D);
            const dS = tf.mul(p, tf.sub(dP, tf.sum(tf.mul(dP, p), 1, true))) as tf.Tensor2D;
            return [tf.matMul(dS, ks), tf.matMul(tf.transpose(dS) as tf.Tensor2D, qTile), tf.matMul(tf.transpose(p) as tf.Tensor2D, dO)] as tf.Tensor2D[];
          });
          dQ.push(dq);
          dK = accumulate(dK, dk);
          dV = accumulate(dV, dv);
        }
        const dq = dQ.length === 1 ? dQ[0] : tf.concat(dQ, 0);
        if (dQ.length > 1) dQ.forEach((t) => t.dispose());
        return [dq, dK as tf.Tensor2D, dV as tf.Tensor2D];
      },
    };
  });
  return f(q, k, v) as tf.Tensor2D;
}
