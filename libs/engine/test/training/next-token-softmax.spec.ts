import * as tf from '@tensorflow/tfjs-core';
import { countGpuWork } from '../../src/kernels/gpu-counters';
import { nextTokenLogitsGradient, nextTokenSoftmax } from '../../src/kernels/next-token-softmax';
import { ensureTrainingGradients } from '../../src/training/gradients';
import { maxAbsDiff, useBackend, webgpuUnavailable } from '../helpers';

const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) console.warn(`webgpu softmax kernel tests skipped: ${unavailable}`);

/** Logits [n, V] with a spread like a trained head's, one column of the first row -Infinity (a token nothing may pick). */
function logitsOf(n: number, V: number, seed: number): tf.Tensor2D {
  const values = tf.randomNormal([n, V], 0, 4, 'float32', seed).dataSync() as Float32Array;
  values[7] = -Infinity;
  return tf.tensor2d(values, [n, V]);
}

/** log p(target), the entropy and d(sum dLogprobs log p) / d logits with tfjs ops. */
function withOps(logits: tf.Tensor2D, targets: number[], dLogprobs: tf.Tensor1D) {
  // -1e30 in place of -Infinity, whose product with a one-hot 0 would be NaN: the same softmax.
  const finiteLogits = tf.where(tf.isFinite(logits), logits, tf.fill(logits.shape, -1e30));
  const logprobsOf = (x: tf.Tensor) => tf.sum(tf.mul(tf.logSoftmax(x as tf.Tensor2D), tf.oneHot(tf.tensor1d(targets, 'int32'), logits.shape[1])), 1);
  const logSoftmax = tf.logSoftmax(finiteLogits);
  return {
    logprobs: logprobsOf(finiteLogits),
    entropy: tf.neg(tf.sum(tf.mul(tf.exp(logSoftmax), logSoftmax), 1)),
    dLogits: tf.grad(logprobsOf)(finiteLogits, dLogprobs),
  };
}

describe('the lm_head softmax kernels of a training step', () => {
  beforeAll(async () => {
    ensureTrainingGradients();
    await useBackend('wasm');
  });

  // V = 1003 leaves three columns after the four-wide loops, as 49,152 does not.
  it.each([
    [3, 1003],
    [6, 4096],
  ])('give the log-probs, entropies and logits gradient of tfjs ops (%i rows, vocabulary %i)', (n, V) => {
    tf.tidy(() => {
      const logits = logitsOf(n, V, n);
      const targets = Array.from({ length: n }, (_, r) => (r * 389 + 11) % V);
      const ids = tf.tensor1d(targets, 'int32');
      const dLogprobs = tf.randomNormal([n], 0, 1, 'float32', 3) as tf.Tensor1D;
      const fused = nextTokenSoftmax(logits, ids);
      if (!fused) throw new Error('the kernel does not apply on wasm');
      const expected = withOps(logits, targets, dLogprobs);
      expect(maxAbsDiff(fused.logprobs.dataSync(), expected.logprobs.dataSync())).toBeLessThan(1e-5);
      expect(maxAbsDiff(fused.entropy.dataSync(), expected.entropy.dataSync())).toBeLessThan(1e-5);
      const dLogits = nextTokenLogitsGradient(fused, ids, dLogprobs);
      expect(dLogits.shape).toEqual([n, V]);
      expect(maxAbsDiff(dLogits.dataSync(), expected.dLogits.dataSync())).toBeLessThan(1e-5);
      // The masked column has probability 0, so its gradient is exactly 0.
      expect(dLogits.dataSync()[7]).toBe(0);
    });
  });

  // On lavapipe where there is no GPU (scripts/lib/common.sh ensure_vulkan); in CI a missing adapter fails it.
  (unavailable && !inCi ? it.skip : it)('give the same on webgpu, in one program each way, to float32 sums (3 rows, vocabulary 49,157)', async () => {
    const [n, V] = [3, 49157];
    const targets = [5, 49156, 20000];
    const values = (logits: tf.Tensor2D) => logits.dataSync() as Float32Array;
    await useBackend('cpu');
    const cpuLogits = logitsOf(n, V, 9);
    const data = values(cpuLogits);
    const expected = tf.tidy(() => {
      const ops = withOps(cpuLogits, targets, tf.tensor1d([0.5, -2, 1.25]));
      return [ops.logprobs, ops.entropy, ops.dLogits].map((t) => t.dataSync() as Float32Array);
    });
    cpuLogits.dispose();
    await useBackend('webgpu');
    const before = tf.memory().numTensors;
    const logits = tf.tensor2d(data, [n, V]);
    const ids = tf.tensor1d(targets, 'int32');
    const dLogprobs = tf.tensor1d([0.5, -2, 1.25]);
    try {
      const forward = await countGpuWork(async () => {
        const fused = nextTokenSoftmax(logits, ids);
        if (fused) await fused.stats.data();
        return fused;
      });
      const fused = forward.result;
      if (!fused) throw new Error('the kernel does not apply on webgpu');
      const backward = await countGpuWork(async () => nextTokenLogitsGradient(fused, ids, dLogprobs));
      const dLogits = backward.result;
      // The softmax program, then log p and the entropy from its stats: unstack's three slices, a log, two subtractions.
      expect(forward.counts.dispatches).toBe(7);
      expect(backward.counts.dispatches).toBe(1);
      expect(maxAbsDiff(await fused.logprobs.data(), expected[0])).toBeLessThan(1e-5);
      expect(maxAbsDiff(await fused.entropy.data(), expected[1])).toBeLessThan(1e-4);
      const gradient = (await dLogits.data()) as Float32Array;
      expect(maxAbsDiff(gradient, expected[2])).toBeLessThan(1e-6);
      // The -Infinity column has probability 0, so its gradient is 0.
      expect(Math.abs(gradient[7])).toBe(0);
      tf.dispose([fused.logprobs, fused.entropy, fused.exps, fused.stats, dLogits]);
    } finally {
      tf.dispose([logits, ids, dLogprobs]);
      await useBackend('wasm');
    }
    expect(tf.memory().numTensors).toBe(before);
  }, 60_000);

  it('does not apply on another backend', async () => {
    await useBackend('cpu');
    try {
      tf.tidy(() => expect(nextTokenSoftmax(logitsOf(2, 8, 1), tf.tensor1d([0, 1], 'int32'))).toBeNull());
    } finally {
      await useBackend('wasm');
    }
  });
});
