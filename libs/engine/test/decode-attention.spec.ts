import * as tf from '@tensorflow/tfjs-core';
import { decodeAttention, decodeAttentionKernelAvailable } from '../src/kernels/decode-attention';
import { MASKED } from '../src/model/kv-cache';
import { maxAbsDiff, useBackend } from './helpers';

/** softmax(q k^T + mask) v with plain tfjs ops, as model/llama.ts computed it before the kernel. */
function reference(q: tf.Tensor3D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D): tf.Tensor3D {
  const [B, KV, S, D] = k.shape;
  const [groups, G] = q.shape;
  return tf.tidy(() => {
    const scores = tf.matMul(q, tf.reshape(k, [groups, S, D]), false, true);
    const probs = tf.softmax(tf.add(tf.reshape(scores, [B, KV * G, 1, S]), mask));
    return tf.matMul(tf.reshape(probs, [groups, G, S]), tf.reshape(v, [groups, S, D]));
  });
}

/** The kernel's result; fails the test where the kernel declines. */
function fusedAttention(q: tf.Tensor3D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D): tf.Tensor3D {
  const out = decodeAttention(q, k, v, mask);
  if (!out) throw new Error('the kernel declined shapes it should cover');
  return out;
}

/** Random q [B*KV, G, D] (times qScale), k and v [B, KV, S, D], from seeds seed, seed + 1 and seed + 2. */
function randomInputs([B, KV, G, S, D]: number[], seed: number, qScale = 1): { q: tf.Tensor3D; k: tf.Tensor4D; v: tf.Tensor4D } {
  return {
    q: tf.mul(tf.randomNormal([B * KV, G, D], 0, 1, 'float32', seed), qScale) as tf.Tensor3D,
    k: tf.randomNormal([B, KV, S, D], 0, 1, 'float32', seed + 1) as tf.Tensor4D,
    v: tf.randomNormal([B, KV, S, D], 0, 1, 'float32', seed + 2) as tf.Tensor4D,
  };
}

/** A [B, 1, 1, S] mask hiding a pseudo-random third of each row's columns, never its last one. */
function paddingMask(B: number, S: number, seed: number): tf.Tensor4D {
  const data = new Float32Array(B * S);
  for (let b = 0; b < B; b++) for (let s = 0; s < S - 1; s++) if ((b * 31 + s * 17 + seed) % 3 === 0) data[b * S + s] = MASKED;
  return tf.tensor4d(data, [B, 1, 1, S]);
}

describe('decode attention kernel (wasm)', () => {
  beforeAll(() => useBackend('wasm'));

  it('is active on the wasm backend', () => {
    expect(decodeAttentionKernelAvailable()).toBe(true);
  });

  it.each([
    // B, KV, G, S, D: SmolLM2-135M's grouping (3 KV heads of 3 queries, D 64), one KV head, one query per head, a single column, long rows.
    [8, 3, 3, 100, 64],
    [1, 1, 4, 17, 8],
    [3, 2, 1, 5, 4],
    [2, 3, 3, 1, 64],
    [4, 1, 2, 700, 32],
    // D 72: sixteen dimensions at a time, then the last eight four at a time.
    [2, 2, 3, 33, 72],
  ])('matches softmax(q k^T + mask) v for B %i, KV %i, G %i, S %i, D %i', (B, KV, G, S, D) => {
    tf.tidy(() => {
      // Scores spread over several units, so the weights span orders of magnitude; the sums run
      // in another order than tfjs's, so they agree to float32 rounding, not bit for bit.
      const { q, k, v } = randomInputs([B, KV, G, S, D], 1, 2);
      const mask = paddingMask(B, S, S);
      const fused = fusedAttention(q, k, v, mask);
      expect(fused.shape).toEqual([B * KV, G, D]);
      expect(maxAbsDiff(fused.dataSync(), reference(q, k, v, mask).dataSync())).toBeLessThan(5e-5);
    });
  });

  it('reads only the mask\'s columns of keys and values that hold spare ones after them (a KV cache\'s)', () => {
    tf.tidy(() => {
      const [B, KV, G, S, D] = [2, 3, 3, 9, 64];
      const { q, k, v } = randomInputs([B, KV, G, S, D], 5);
      const mask = paddingMask(B, S, 2);
      const spare = (x: tf.Tensor4D) => tf.concat([x, tf.fill([B, KV, 7, D], NaN)], 2) as tf.Tensor4D;
      const exact = fusedAttention(q, k, v, mask).dataSync();
      expect(maxAbsDiff(fusedAttention(q, spare(k), spare(v), mask).dataSync(), exact)).toBe(0);
    });
  });

  it('ignores what masked columns hold', () => {
    tf.tidy(() => {
      const [B, KV, G, S, D] = [2, 1, 2, 6, 8];
      const { q, k, v } = randomInputs([B, KV, G, S, D], 4);
      const mask = paddingMask(B, S, 1);
      const hidden = tf.equal(tf.reshape(mask, [B, 1, S, 1]), MASKED);
      const garbage = tf.fill([B, KV, S, D], 1e4);
      const before = fusedAttention(q, k, v, mask).dataSync();
      const after = fusedAttention(q, tf.where(hidden, garbage, k) as tf.Tensor4D, tf.where(hidden, garbage, v) as tf.Tensor4D, mask).dataSync();
      expect(maxAbsDiff(before, after)).toBe(0);
    });
  });

  it('gives zeros for a row whose every column is masked, and the other rows as usual', () => {
    tf.tidy(() => {
      const [B, KV, G, S, D] = [2, 2, 3, 9, 16];
      const { q, k, v } = randomInputs([B, KV, G, S, D], 7);
      const mask = tf.concat([tf.fill([1, 1, 1, S], MASKED), paddingMask(1, S, 2)]) as tf.Tensor4D;
      const fused = fusedAttention(q, k, v, mask).dataSync();
      const half = KV * G * D;
      expect(Array.from(fused.subarray(0, half)).every((x) => x === 0)).toBe(true);
      expect(maxAbsDiff(fused.subarray(half), reference(q, k, v, mask).dataSync().subarray(half))).toBeLessThan(5e-5);
    });
  });

  it('leaves nothing behind on the heap but its result', () => {
    const q = tf.randomNormal([6, 3, 64]) as tf.Tensor3D;
    const k = tf.randomNormal([2, 3, 40, 64]) as tf.Tensor4D;
    const mask = paddingMask(2, 40, 0);
    // The backend's own count of what it holds: the kernel's scratch is on it, though no tensor.
    const before = tf.backend().numDataIds();
    const out = fusedAttention(q, k, k, mask);
    expect(tf.backend().numDataIds()).toBe(before + 1);
    tf.dispose([q, k, mask, out]);
  });

  it('leaves shapes it does not cover to tfjs ops, and refuses shapes that do not fit', () => {
    tf.tidy(() => {
      const q = tf.zeros([2, 1, 6]) as tf.Tensor3D;
      const k = tf.zeros([2, 1, 3, 6]) as tf.Tensor4D;
      expect(decodeAttention(q, k, k, tf.zeros([2, 1, 1, 3]))).toBeNull(); // D not a multiple of 4
      const q8 = tf.zeros([2, 1, 8]) as tf.Tensor3D;
      const k8 = tf.zeros([2, 1, 3, 8]) as tf.Tensor4D;
      expect(decodeAttention(q8, k8, k8, tf.zeros([1, 1, 1, 3]))).toBeNull(); // mask broadcast over the batch
      expect(() => decodeAttention(tf.zeros([3, 1, 8]) as tf.Tensor3D, k8, k8, tf.zeros([2, 1, 1, 3]))).toThrow(/do not fit/);
    });
  });
});
