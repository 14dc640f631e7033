import * as tf from '@tensorflow/tfjs-core';
import { rmsNorm } from '../src/kernels/rms-norm';
import { swiglu } from '../src/kernels/swiglu';
import { ensureTrainingGradients } from '../src/training/gradients';
import { maxAbsDiff, useBackend } from './helpers';

/** RMSNorm with plain tfjs ops, as model/llama.ts computes it under a gradient. */
function referenceNorm(x: tf.Tensor2D, weight: tf.Tensor1D, eps: number): tf.Tensor2D {
  return tf.tidy(() => tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps))), weight));
}

/** silu(gate) * up with plain tfjs ops. */
function referenceGate(gateUp: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => {
    const [gate, up] = tf.split(gateUp, 2, 1);
    return tf.mul(tf.mul(gate, tf.sigmoid(gate)), up);
  });
}

describe('RMSNorm and SwiGLU kernels (wasm)', () => {
  beforeAll(() => useBackend('wasm'));

  it.each([
    [1, 576],
    [5, 64],
    [8, 2048],
  ])('normalizes %i rows of %i as tfjs ops do, within float32 rounding', (M, C) => {
    tf.tidy(() => {
      const x = tf.mul(tf.randomNormal([M, C], 0, 1, 'float32', C), tf.reshape(tf.linspace(0.1, 30, M), [M, 1])) as tf.Tensor2D;
      const weight = tf.randomNormal([C], 1, 0.2, 'float32', M) as tf.Tensor1D;
      const out = rmsNorm(x, weight, 1e-5) as tf.Tensor2D;
      expect(out.shape).toEqual([M, C]);
      expect(maxAbsDiff(out.dataSync(), referenceNorm(x, weight, 1e-5).dataSync())).toBeLessThan(1e-5);
    });
  });

  it('normalizes a row of zeros to zeros (eps keeps it finite)', () => {
    tf.tidy(() => {
      const out = rmsNorm(tf.zeros([2, 8]) as tf.Tensor2D, tf.ones([8]) as tf.Tensor1D, 1e-6) as tf.Tensor2D;
      expect(Array.from(out.dataSync())).toEqual(new Array(16).fill(0));
    });
  });

  it.each([
    [1, 1536],
    [3, 12],
    [8, 64],
  ])('gates %i rows of %i features as silu(gate) * up, within float32 rounding, large gates included', (M, F) => {
    tf.tidy(() => {
      const gateUp = tf.mul(tf.randomNormal([M, 2 * F], 0, 1, 'float32', F), 8) as tf.Tensor2D;
      const extremes = tf.tensor2d([[-200, -90, -87.5, -1e-30, 0, 1e-30, 88, 1e4]], [1, 8]);
      const out = swiglu(gateUp) as tf.Tensor2D;
      const expected = referenceGate(gateUp);
      expect(out.shape).toEqual([M, F]);
      const scale = Math.max(...Array.from(expected.dataSync()).map(Math.abs));
      expect(maxAbsDiff(out.dataSync(), expected.dataSync()) / scale).toBeLessThan(1e-6);
      // Gates far past where exp over- or underflows: silu is 0 and g there, never NaN.
      const wide = swiglu(tf.concat([extremes, tf.ones([1, 8])], 1) as tf.Tensor2D) as tf.Tensor2D;
      expect(Array.from(wide.dataSync()).every(Number.isFinite)).toBe(true);
      expect(maxAbsDiff(wide.dataSync(), [0, 0, 0, 0, 0, 0, 88, 1e4])).toBeLessThan(1e-4);
    });
  });

  it('gives each row the same bits alone as in a batch', () => {
    tf.tidy(() => {
      const [M, C] = [6, 96];
      const x = tf.randomNormal([M, C], 0, 3, 'float32', 11) as tf.Tensor2D;
      const weight = tf.randomNormal([C], 1, 0.1, 'float32', 12) as tf.Tensor1D;
      const normed = (rmsNorm(x, weight, 1e-5) as tf.Tensor2D).arraySync();
      const gated = (swiglu(x) as tf.Tensor2D).arraySync();
      for (let r = 0; r < M; r++) {
        const row = tf.slice(x, [r, 0], [1, C]);
        expect((rmsNorm(row, weight, 1e-5) as tf.Tensor2D).arraySync()[0]).toEqual(normed[r]);
        expect((swiglu(row) as tf.Tensor2D).arraySync()[0]).toEqual(gated[r]);
      }
    });
  });

  it('declines under a gradient tape, for shapes it does not cover, and on another backend', async () => {
    tf.tidy(() => {
      const x = tf.ones([2, 8]) as tf.Tensor2D;
      const weight = tf.ones([8]) as tf.Tensor1D;
      ensureTrainingGradients();
      tf.grad((t: tf.Tensor) => {
        expect(rmsNorm(t as tf.Tensor2D, weight, 1e-5)).toBeNull();
        expect(swiglu(t as tf.Tensor2D)).toBeNull();
        return tf.sum(t);
      })(x);
      expect(rmsNorm(tf.ones([2, 6]) as tf.Tensor2D, tf.ones([6]) as tf.Tensor1D, 1e-5)).toBeNull();
      expect(swiglu(tf.ones([2, 12]) as tf.Tensor2D)).toBeNull();
      expect(() => rmsNorm(x, tf.ones([4]) as tf.Tensor1D, 1e-5)).toThrow(/do not fit/);
    });
    await useBackend('cpu');
    try {
      tf.tidy(() => {
        expect(rmsNorm(tf.ones([2, 8]) as tf.Tensor2D, tf.ones([8]) as tf.Tensor1D, 1e-5)).toBeNull();
        expect(swiglu(tf.ones([2, 8]) as tf.Tensor2D)).toBeNull();
      });
    } finally {
      await useBackend('wasm');
    }
  });
});
