import * as tf from '@tensorflow/tfjs-core';
import { nextTokenLogitsGradient, nextTokenSoftmax } from '../../src/kernels/next-token-softmax';
import { ensureTrainingGradients } from '../../src/training/gradients';
import { maxAbsDiff, useBackend } from '../helpers';

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

  it('does not apply on another backend', async () => {
    await useBackend('cpu');
    try {
      tf.tidy(() => expect(nextTokenSoftmax(logitsOf(2, 8, 1), tf.tensor1d([0, 1], 'int32'))).toBeNull());
    } finally {
      await useBackend('wasm');
    }
  });
});
