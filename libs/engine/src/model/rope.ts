import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig, RopeScaling } from '../config';
import { rope } from '../ops';
import { KeptConstants } from './kept-constants';

/** Tables of fewer positions (a decoding step's rows) are made at each call; longer ones are kept. */
const KEPT_FROM_POSITIONS = 32;
/** The most position lists whose tables a Rope keeps: a training step's, a few prompt lengths'. */
const KEPT_TABLES = 4;

/**
 * Rotary position embeddings in the HF (rotate_half, non-interleaved) layout:
 * rope(x) = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
 *
 * Per-op dispatch dominates decoding on wasm, so the tables are built once per forward in JS
 * for exactly the positions being computed (and kept for long position lists, tables()),
 * shared by every layer, and rotate_half is a matMul by a fixed signed permutation instead of
 * slice/neg/concat.
 */
export class Rope {
  readonly invFreq: Float32Array;
  /** rotate_half as a [headDim, headDim] matrix: x @ R == rotate_half(x). */
  readonly rotation: tf.Tensor2D;
  /** Tables kept by their positions (tables()). */
  private readonly kept = new KeptConstants<{ cos: tf.Tensor3D; sin: tf.Tensor3D }>(KEPT_TABLES);

  /** `base`: the RoPE base and scaling, the config's unless given (Gemma 3's windowed layers have a base of their own). */
  constructor(
    private readonly config: ModelConfig,
    base: RopeBase = { theta: config.ropeTheta, scaling: config.ropeScaling },
  ) {
    this.invFreq = inverseFrequencies(config, base);
    const d = config.headDim;
    const h = d / 2;
    const r = new Float32Array(d * d);
    for (let j = 0; j < h; j++) {
      r[(j + h) * d + j] = -1;
      r[j * d + (j + h)] = 1;
    }
    this.rotation = tf.tensor2d(r, [d, d]);
  }

  /**
   * cos and sin for q and k heads laid side by side, [N, numHeads + numKvHeads, headDim].
   * The q heads carry the attention scale 1/sqrt(headDim) (1/sqrt(query_pre_attn_scalar) for
   * Gemma): rope is linear, so scaling here saves a multiply per layer.
   *
   * A pass's positions repeat (each of B rows counts 0..T-1), and a position's values repeat
   * across its heads: each position's row of cos and sin is computed once, copied to its heads,
   * and a position seen before copies its first occurrence's block. The tables of a
   * 1,024-token step of a 3B model hold 2.4 million values each, about 10 ms of the host's time
   * to write and 19 MB to upload: the tables of the KEPT_TABLES position lists of at least
   * KEPT_FROM_POSITIONS positions most recently asked for are kept (KeptConstants), and a
   * caller gets clones of them, which it disposes as any tensor it is given.
   */
  tables(positions: number[]): { cos: tf.Tensor3D; sin: tf.Tensor3D } {
    if (positions.length < KEPT_FROM_POSITIONS) return this.makeTables(positions);
    return this.kept.get(positions, () => this.makeTables(positions));
  }

  private makeTables(positions: number[]): { cos: tf.Tensor3D; sin: tf.Tensor3D } {
    const { numHeads, numKvHeads, headDim } = this.config;
    const heads = numHeads + numKvHeads;
    const block = heads * headDim;
    const cos = new Float32Array(positions.length * block);
    const sin = new Float32Array(cos.length);
    const rows = { cos: new Float32Array(headDim), sin: new Float32Array(headDim), qCos: new Float32Array(headDim), qSin: new Float32Array(headDim) };
    /** The index in `positions` of each position's first occurrence. */
    const first = new Map<number, number>();
    positions.forEach((p, n) => {
      const at = n * block;
      const seen = first.get(p);
      if (seen !== undefined) {
        cos.copyWithin(at, seen * block, (seen + 1) * block);
        sin.copyWithin(at, seen * block, (seen + 1) * block);
        return;
      }
      first.set(p, n);
      this.positionRows(p, rows);
      for (let head = 0; head < heads; head++) {
        cos.set(head < numHeads ? rows.qCos : rows.cos, at + head * headDim);
        sin.set(head < numHeads ? rows.qSin : rows.sin, at + head * headDim);
      }
    });
    const shape: [number, number, number] = [positions.length, heads, headDim];
    return { cos: tf.tensor3d(cos, shape), sin: tf.tensor3d(sin, shape) };
  }

  /** Position p's cos and sin over a head, and the same times the q heads' attention scale (rounded to f32 as stored). */
  private positionRows(p: number, rows: { cos: Float32Array; sin: Float32Array; qCos: Float32Array; qSin: Float32Array }): void {
    const { headDim, queryPreAttnScalar } = this.config;
    const half = headDim / 2;
    const scale = 1 / Math.sqrt(queryPreAttnScalar ?? headDim);
    for (let j = 0; j < half; j++) {
      // float32 products, as HF computes them, so long positions round the same way.
      const angle = Math.fround(p * this.invFreq[j]);
      rows.cos[j] = rows.cos[j + half] = Math.cos(angle);
      rows.sin[j] = rows.sin[j + half] = Math.sin(angle);
    }
    for (let j = 0; j < headDim; j++) {
      rows.qCos[j] = rows.cos[j] * scale;
      rows.qSin[j] = rows.sin[j] * scale;
    }
  }

  /** x: [N, heads, headDim] with cos/sin from tables(). */
  apply(x: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor3D {
    return rope(x, cos, sin, this.rotation);
  }

  dispose(): void {
    this.rotation.dispose();
    this.kept.dispose();
  }
}

/** A RoPE base theta and its rescaling. */
export interface RopeBase {
  theta: number;
  scaling: RopeScaling | null;
}

/** theta^(-2i/d), divided by a linear rescaling's factor, or with Llama 3's frequency-dependent rescaling, when configured. */
export function inverseFrequencies(config: ModelConfig, base: RopeBase = { theta: config.ropeTheta, scaling: config.ropeScaling }): Float32Array {
  const d = config.headDim;
  const inv = new Float32Array(d / 2);
  for (let i = 0; i < d / 2; i++) inv[i] = 1 / Math.pow(base.theta, (2 * i) / d);
  const s = base.scaling;
  if (!s) return inv;
  if (s.type === 'linear') return inv.map((f) => f / s.factor);
  const lowFreqWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
  const highFreqWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
  for (let i = 0; i < inv.length; i++) {
    const wavelen = (2 * Math.PI) / inv[i];
    if (wavelen > lowFreqWavelen) {
      inv[i] = inv[i] / s.factor;
    } else if (wavelen >= highFreqWavelen) {
      const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      inv[i] = (1 - smooth) * (inv[i] / s.factor) + smooth * inv[i];
    }
  }
  return inv;
}
