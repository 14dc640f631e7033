import * as tf from '@tensorflow/tfjs-core';
import { promptAttention, promptAttentionWithGradient } from '../src/kernels/prompt-attention';
import { attend } from '../src/ops/attention';
import { MASKED } from '../src/model/kv-cache';
import { ensureTrainingGradients } from '../src/training/gradients';
import { maxAbsDiff, useBackend } from './helpers';

/**
 * softmax(q k^T + mask) v with plain tfjs ops, token-major q [B*T, H*D] in and out: heads-first
 * per KV head, as attention.ts computes it under a gradient tape.
 */
function reference(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, T: number): tf.Tensor2D {
  const [B, KV, S, D] = k.shape;
  const G = q.shape[1] / D / KV;
  return tf.tidy(() => {
    const heads = tf.reshape(tf.transpose(tf.reshape(q, [B, T, KV, G, D]), [0, 2, 3, 1, 4]), [B * KV, G * T, D]);
    const scores = tf.reshape(tf.matMul(heads, tf.reshape(k, [B * KV, S, D]), false, true), [B, KV * G, T, S]);
    const probs = tf.reshape(tf.softmax(tf.add(scores, mask)), [B * KV, G * T, S]);
    const out = tf.matMul(probs, tf.reshape(v, [B * KV, S, D]));
    return tf.reshape(tf.transpose(tf.reshape(out, [B, KV, G, T, D]), [0, 3, 1, 2, 4]), [B * T, KV * G * D]) as tf.Tensor2D;
  });
}

/** Random q [B*T, H*D] (scaled by 2: the weights span orders of magnitude), k and v [B, KV, S, D]. */
function randomInputs([B, KV, G, T, S, D]: number[], seed: number) {
  return {
    q: tf.mul(tf.randomNormal([B * T, KV * G * D], 0, 1, 'float32', seed), 2) as tf.Tensor2D,
    k: tf.randomNormal([B, KV, S, D], 0, 1, 'float32', seed + 1) as tf.Tensor4D,
    v: tf.randomNormal([B, KV, S, D], 0, 1, 'float32', seed + 2) as tf.Tensor4D,
  };
}

/**
 * A [rows, 1, T, S] mask as KVCache.beginStep makes it: S - T cached columns (of which row b
 * hides its first b, left padding), then the T new ones, causal.
 */
function stepMask(rows: number, T: number, S: number): tf.Tensor4D {
  const data = new Float32Array(rows * T * S).fill(MASKED);
  const past = S - T;
  for (let b = 0; b < rows; b++) {
    for (let t = 0; t < T; t++) {
      const row = (b * T + t) * S;
      for (let c = Math.min(b, past); c < past; c++) data[row + c] = 0;
      for (let u = 0; u <= t; u++) data[row + past + u] = 0;
    }
  }
  return tf.tensor4d(data, [rows, 1, T, S]);
}

function kernel(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, T: number): tf.Tensor2D {
  const out = promptAttention(q, k, v, mask, T);
  if (!out) throw new Error('the kernel declined shapes it should cover');
  return out;
}

function kernelWithGradient(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, T: number): tf.Tensor2D {
  const out = promptAttentionWithGradient(q, k, v, mask, T);
  if (!out) throw new Error('the kernel declined shapes it should cover');
  return out;
}

describe('prompt attention kernel (wasm)', () => {
  beforeAll(() => useBackend('wasm'));

  it.each([
    // B, KV, G, T, S, D, mask rows: SmolLM2-135M's grouping over a fresh prompt (one causal mask for every row),
    [1, 3, 3, 20, 20, 64, 1],
    [2, 3, 3, 16, 16, 64, 1],
    // prompts after cached columns with left padding per row, one KV head, D 72 (16 then 4 at a time),
    [3, 2, 2, 5, 12, 8, 3],
    [2, 1, 4, 7, 9, 72, 2],
    // one new token (a one-token prompt, or decoding off the decode kernel's path).
    [2, 3, 3, 1, 6, 64, 2],
  ])('matches the tfjs ops for B %i, KV %i, G %i, T %i, S %i, D %i, %i mask rows', (B, KV, G, T, S, D, rows) => {
    tf.tidy(() => {
      const { q, k, v } = randomInputs([B, KV, G, T, S, D], 1);
      const mask = stepMask(rows, T, S);
      const fused = kernel(q, k, v, mask, T);
      expect(fused.shape).toEqual([B * T, KV * G * D]);
      expect(maxAbsDiff(fused.dataSync(), reference(q, k, v, mask, T).dataSync())).toBeLessThan(5e-5);
    });
  });

  it('gives zeros to a token that sees no column, and ignores what masked columns hold', () => {
    tf.tidy(() => {
      const [B, KV, G, T, S, D] = [2, 1, 2, 3, 5, 8];
      const { q, k, v } = randomInputs([B, KV, G, T, S, D], 4);
      const data = stepMask(B, T, S).dataSync() as Float32Array;
      data.fill(MASKED, 0, S); // row 0's first token sees nothing
      const mask = tf.tensor4d(data, [B, 1, T, S]);
      const before = kernel(q, k, v, mask, T);
      expect(Array.from(before.dataSync().slice(0, KV * G * D))).toEqual(new Array(KV * G * D).fill(0));
      // Row 1 hides its first cached column from every token: garbage there changes nothing.
      const hidden = tf.tensor4d(Array.from({ length: B * KV * S * D }, (_, i) => (Math.floor(i / (KV * S * D)) === 1 && Math.floor(i / D) % S === 0 ? 1 : 0)), [B, KV, S, D], 'bool');
      const garbage = tf.fill([B, KV, S, D], 1e4);
      const after = kernel(q, tf.where(hidden, garbage, k) as tf.Tensor4D, tf.where(hidden, garbage, v) as tf.Tensor4D, mask, T);
      expect(maxAbsDiff(before.dataSync(), after.dataSync())).toBe(0);
    });
  });

  it.each([
    // B, KV, G, T, S, D, mask rows: a training step's shapes (no cache, causal), two rows,
    [2, 3, 3, 12, 12, 64, 1],
    // and cached columns with left padding per row, D 72, one KV head;
    [3, 2, 2, 5, 12, 8, 3],
    [2, 1, 4, 7, 9, 72, 2],
    // D 12 (the tiles' last 4 dimensions alone) and 15 query rows per head (the last tile's 4th row repeats the 3rd).
    [2, 1, 3, 5, 8, 12, 2],
  ])('gives the gradients of the tfjs ops for B %i, KV %i, G %i, T %i, S %i, D %i, %i mask rows', (B, KV, G, T, S, D, rows) => {
    ensureTrainingGradients();
    tf.tidy(() => {
      const { q, k, v } = randomInputs([B, KV, G, T, S, D], 11);
      const mask = stepMask(rows, T, S);
      const dy = tf.randomNormal([B * T, KV * G * D], 0, 1, 'float32', 12) as tf.Tensor2D;
      const gradientsOf = (f: (q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D) => tf.Tensor2D) =>
        tf.grads((a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => f(a as tf.Tensor2D, b as tf.Tensor4D, c as tf.Tensor4D))([q, k, v], dy);
      const fused = gradientsOf((a, b, c) => kernelWithGradient(a, b, c, mask, T));
      const expected = gradientsOf((a, b, c) => reference(a, b, c, mask, T));
      for (let i = 0; i < 3; i++) {
        expect(fused[i].shape).toEqual(expected[i].shape);
        expect(maxAbsDiff(fused[i].dataSync(), expected[i].dataSync())).toBeLessThan(1e-4);
      }
    });
  });

  it('gives no gradient through a token that sees no column', () => {
    ensureTrainingGradients();
    tf.tidy(() => {
      const [B, KV, G, T, S, D] = [2, 1, 2, 3, 5, 8];
      const { q, k, v } = randomInputs([B, KV, G, T, S, D], 14);
      const data = stepMask(B, T, S).dataSync() as Float32Array;
      data.fill(MASKED, 0, S); // row 0's first token sees nothing: its output is 0 whatever q, k and v hold
      const mask = tf.tensor4d(data, [B, 1, T, S]);
      const dy = tf.randomNormal([B * T, KV * G * D], 0, 1, 'float32', 15) as tf.Tensor2D;
      const silenced = tf.concat([tf.zeros([1, KV * G * D]), tf.slice(dy, [1, 0], [-1, -1])]) as tf.Tensor2D;
      const gradients = (d: tf.Tensor2D) => tf.grads((a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => kernelWithGradient(a as tf.Tensor2D, b as tf.Tensor4D, c as tf.Tensor4D, mask, T))([q, k, v], d);
      const [withDy, withSilenced] = [gradients(dy), gradients(silenced)];
      expect(Array.from(withDy[0].dataSync().slice(0, KV * G * D))).toEqual(new Array(KV * G * D).fill(0));
      for (let i = 0; i < 3; i++) expect(maxAbsDiff(withDy[i].dataSync(), withSilenced[i].dataSync())).toBe(0);
    });
  });

  it.each([
    // B, KV, G, T, S, D: the tiled kernel (D a multiple of 8), one token per row, and D 6 (no kernel: attend's tfjs ops).
    [3, 2, 2, 5, 12, 8],
    [2, 3, 3, 1, 6, 64],
    [2, 1, 2, 3, 7, 6],
  ])('attends over only the mask\'s columns of keys and values with spare ones after them, for B %i, KV %i, G %i, T %i, S %i, D %i', (B, KV, G, T, S, D) => {
    tf.tidy(() => {
      const { q, k, v } = randomInputs([B, KV, G, T, S, D], 13);
      const mask = stepMask(B, T, S);
      const spare = (x: tf.Tensor4D) => tf.concat([x, tf.fill([B, KV, 5, D], NaN)], 2) as tf.Tensor4D;
      const dims = { B, H: KV * G, T, cached: true };
      const exact = attend(q, k, v, mask, dims).dataSync();
      expect(maxAbsDiff(attend(q, spare(k), spare(v), mask, dims).dataSync(), exact)).toBe(0);
      expect(maxAbsDiff(exact, reference(q, k, v, mask, T).dataSync())).toBeLessThan(5e-5);
    });
  });

  it('is what attend runs, with its gradient kernel under a tape', async () => {
    ensureTrainingGradients();
    const { q, k, v } = randomInputs([1, 3, 3, 8, 8, 64], 7);
    const mask = stepMask(1, 8, 8);
    const dims = { B: 1, H: 9, T: 8, cached: false };
    const kernelsOf = async (f: () => tf.Tensor) => (await tf.profile(() => tf.tidy(f))).kernelNames;
    const plain = await kernelsOf(() => attend(q, k, v, mask, dims));
    const taped = await kernelsOf(() => tf.grad((x: tf.Tensor) => attend(x as tf.Tensor2D, k, v, mask, dims))(q));
    tf.dispose([q, k, v, mask]);
    expect(plain).toContain('TrainyardPromptAttention');
    expect(taped).toEqual(expect.arrayContaining(['TrainyardPromptAttention', 'TrainyardPromptAttentionBackward']));
    expect(taped).not.toContain('BatchMatMul');
  });

  it('throws on shapes that do not fit together', () => {
    tf.tidy(() => {
      const { q, k, v } = randomInputs([1, 2, 2, 4, 4, 8], 9);
      expect(() => promptAttention(q, k, v, stepMask(1, 3, 4), 4)).toThrow(/do not fit together/);
    });
  });
});
