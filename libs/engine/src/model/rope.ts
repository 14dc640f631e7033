import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig, RopeScaling } from '../config';
import { rope } from '../ops';

/**
 * Rotary position embeddings in the HF (rotate_half, non-interleaved) layout:
 * rope(x) = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
 *
 * Per-op dispatch dominates decoding on wasm, so the tables are built once per forward in JS
 * for exactly the positions being computed, shared by every layer, and rotate_half is a
 * matMul by a fixed signed permutation instead of slice/neg/concat.
 */
export class Rope {
  readonly invFreq: Float32Array;
  /** rotate_half as a [headDim, headDim] matrix: x @ R == rotate_half(x). */
  readonly rotation: tf.Tensor2D;

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
   */
  tables(positions: number[]): { cos: tf.Tensor3D; sin: tf.Tensor3D } {
    const { numHeads, numKvHeads, headDim, queryPreAttnScalar } = this.config;
    const heads = numHeads + numKvHeads;
    const half = headDim / 2;
    const scale = 1 / Math.sqrt(queryPreAttnScalar ?? headDim);
    const cos = new Float32Array(positions.length * heads * headDim);
    const sin = new Float32Array(cos.length);
    const rowCos = new Float32Array(headDim);
    const rowSin = new Float32Array(headDim);
    positions.forEach((p, n) => {
      for (let j = 0; j < half; j++) {
        // float32 products, as HF computes them, so long positions round the same way.
        const angle = Math.fround(p * this.invFreq[j]);
        rowCos[j] = rowCos[j + half] = Math.cos(angle);
        rowSin[j] = rowSin[j + half] = Math.sin(angle);
      }
      for (let head = 0; head < heads; head++) {
        const s = head < numHeads ? scale : 1;
        const base = (n * heads + head) * headDim;
        for (let j = 0; j < headDim; j++) {
          cos[base + j] = rowCos[j] * s;
          sin[base + j] = rowSin[j] * s;
        }
      }
    });
    const shape: [number, number, number] = [positions.length, heads, headDim];
    return { cos: tf.tensor3d(cos, shape), sin: tf.tensor3d(sin, shape) };
  }

  /** x: [N, heads, headDim] with cos/sin from tables(). */
  apply(x: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor3D {
    return rope(x, cos, sin, this.rotation);
  }

  dispose(): void {
    this.rotation.dispose();
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
