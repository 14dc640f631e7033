import * as tf from '@tensorflow/tfjs-core';
import { PackedWeights, packWeights } from '../src/kernels/matmul';
import { packedMatMulTransposed } from '../src/kernels/matmul-transposed';
import { FrozenLinear } from '../src/model/linear';
import { ensureTrainingGradients } from '../src/training/gradients';
import { maxAbsDiff, useBackend } from './helpers';

/** dy W^T on the kernel, from W packed as f32 panels; fails the test where the kernel declines. */
function kernelProduct(dy: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  const packed = packWeights(w, 'f32');
  if (!packed) throw new Error('packWeights declined a weight it should cover');
  const out = packedMatMulTransposed(dy, packed);
  packed.dispose();
  if (!out) throw new Error('packedMatMulTransposed declined shapes it should cover');
  return out;
}

describe('packed transposed matMul kernel (wasm): dx = dy W^T from the forward panels', () => {
  beforeAll(() => useBackend('wasm'));

  it('gives tf.matMul(dy, W, false, true) for row counts around the 8-row tile and panel counts around a block', () => {
    tf.tidy(() => {
      // M: 1, 7, 8, 9, 63 and 136 rows (tiles of 8, zero-padded; blocks of 64); N up to 33 panels (blocks of 32).
      for (const [M, K, N] of [
        [1, 4, 8],
        [7, 12, 16],
        [8, 36, 264],
        [9, 64, 256],
        [63, 96, 40],
        [136, 8, 264],
      ]) {
        const w = tf.randomNormal([K, N], 0, 1, 'float32', K + N) as tf.Tensor2D;
        const dy = tf.randomNormal([M, N], 0, 1, 'float32', M) as tf.Tensor2D;
        const ours = kernelProduct(dy, w);
        const theirs = tf.matMul(dy, w, false, true);
        expect(ours.shape).toEqual([M, K]);
        // Sums of N products of unit normals, in another order than XNNPACK's.
        expect(maxAbsDiff(ours.dataSync(), theirs.dataSync())).toBeLessThan(1e-5 * Math.sqrt(N));
      }
    });
  });

  it('gives exact sums where every product is exact, with the columns in their places', () => {
    tf.tidy(() => {
      const [M, K, N] = [3, 8, 16];
      // Small integers: every product and partial sum is exact in float32, whatever the order.
      const w = tf.tensor2d(Float32Array.from({ length: K * N }, (_, i) => (i % 7) - 3), [K, N]);
      const dy = tf.tensor2d(Float32Array.from({ length: M * N }, (_, i) => (i % 5) - 2), [M, N]);
      expect(Array.from(kernelProduct(dy, w).dataSync())).toEqual(Array.from(tf.matMul(dy, w, false, true).dataSync()));
    });
  });

  it('runs a trainable projection both ways on the packed kernels, with tfjs\'s gradient', async () => {
    ensureTrainingGradients();
    const [M, K, N] = [5, 16, 24];
    const w = tf.randomNormal([K, N], 0, 1, 'float32', 3) as tf.Tensor2D;
    const bias = tf.randomNormal([N], 0, 1, 'float32', 4) as tf.Tensor1D;
    const linear = new FrozenLinear([{ name: 'proj', outFeatures: N }], K, w, bias);
    linear.enableBackward();
    const x = tf.randomNormal([M, K], 0, 1, 'float32', 5) as tf.Tensor2D;
    const c = tf.randomNormal([M, N], 0, 1, 'float32', 6) as tf.Tensor2D;
    const loss = (v: tf.Tensor) => tf.sum(tf.mul(linear.forward(v as tf.Tensor2D), c));
    const profile = await tf.profile(() => tf.grad(loss)(x));
    const grad = profile.result as tf.Tensor;
    const kernels = profile.kernels.map((k) => k.name);
    expect(kernels).toContain('TrainyardPackedMatMul');
    expect(kernels).toContain('TrainyardPackedMatMulTransposed');
    expect(kernels).not.toContain('BatchMatMul');
    expect(linear.packedWeights()?.format).toBe('f32');
    expect(maxAbsDiff(grad.dataSync(), tf.matMul(c, w, false, true).dataSync())).toBeLessThan(1e-5);
    const y = linear.forward(x);
    expect(maxAbsDiff(y.dataSync(), tf.add(tf.matMul(x, w), bias).dataSync())).toBeLessThan(1e-5);
    tf.dispose([grad, y, x, c]);
    linear.dispose();
  });

  it('declines what it does not cover, so the caller uses tfjs: bf16 panels, K not a multiple of 4', () => {
    tf.tidy(() => {
      const bf16 = packWeights(tf.ones([8, 8]) as tf.Tensor2D) as PackedWeights;
      expect(bf16.format).toBe('bf16');
      expect(packedMatMulTransposed(tf.ones([2, 8]) as tf.Tensor2D, bf16)).toBeNull();
      bf16.dispose();
      const odd = packWeights(tf.randomNormal([6, 8]) as tf.Tensor2D, 'f32') as PackedWeights;
      expect(packedMatMulTransposed(tf.ones([2, 8]) as tf.Tensor2D, odd)).toBeNull();
      odd.dispose();
    });
  });
});
