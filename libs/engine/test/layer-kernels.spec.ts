import * as tf from '@tensorflow/tfjs-core';
import { rmsNorm, rmsNormWithGradient } from '../src/kernels/rms-norm';
import { rope, ropeWithGradient } from '../src/kernels/rope';
import { swiglu, swigluWithGradient } from '../src/kernels/swiglu';
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

/** x * cos + rotate_half(x) * sin as model/rope.ts computes it with tfjs ops: rotate_half as a matMul by a signed permutation. */
function referenceRope(x: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor3D {
  return tf.tidy(() => {
    const [n, heads, d] = x.shape;
    const h = d / 2;
    const r = new Float32Array(d * d);
    for (let j = 0; j < h; j++) {
      r[(j + h) * d + j] = -1;
      r[j * d + (j + h)] = 1;
    }
    const rotated = tf.reshape(tf.matMul(tf.reshape(x, [n * heads, d]), tf.tensor2d(r, [d, d])), [n, heads, d]);
    return tf.add(tf.mul(x, cos), tf.mul(rotated, sin));
  });
}

describe('RMSNorm, SwiGLU and RoPE kernels (wasm)', () => {
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

  it.each([
    [1, 12, 64],
    [5, 3, 16],
    [2, 1, 128],
  ])('rotates %i positions of %i heads of %i as the tfjs ops do, to the bit', (N, heads, D) => {
    tf.tidy(() => {
      const x = tf.randomNormal([N, heads, D], 0, 2, 'float32', D) as tf.Tensor3D;
      const angles = tf.randomUniform([N, heads, D], -40, 40, 'float32', N);
      const [cos, sin] = [tf.cos(angles), tf.sin(angles)] as tf.Tensor3D[];
      const out = rope(x, cos, sin) as tf.Tensor3D;
      expect(out.shape).toEqual([N, heads, D]);
      expect(Array.from(out.dataSync())).toEqual(Array.from(referenceRope(x, cos, sin).dataSync()));
      expect(rope(x, tf.slice(cos, [0, 0, 0], [N, heads, D / 2]) as tf.Tensor3D, sin)).toBeNull();
      expect(rope(tf.ones([N, heads, 12]) as tf.Tensor3D, tf.ones([N, heads, 12]) as tf.Tensor3D, tf.ones([N, heads, 12]) as tf.Tensor3D)).toBeNull();
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

  // Training's versions: the same values, and gradients w.r.t. x of the tfjs ops' own.
  it.each([
    [1, 8],
    [5, 576],
    [3, 24],
  ])('RMSNorm and the SwiGLU gate with gradients match the tfjs ops and their gradients for M %i, C %i', (M, C) => {
    ensureTrainingGradients();
    tf.tidy(() => {
      const x = tf.randomNormal([M, C], 0, 3, 'float32', 21) as tf.Tensor2D;
      const weight = tf.randomNormal([C], 1, 0.1, 'float32', 22) as tf.Tensor1D;
      const dy = tf.randomNormal([M, C], 0, 1, 'float32', 23) as tf.Tensor2D;
      const dGate = tf.randomNormal([M, C / 2], 0, 1, 'float32', 24) as tf.Tensor2D;
      const kernelNorm = (t: tf.Tensor) => rmsNormWithGradient(t as tf.Tensor2D, weight, 1e-5) as tf.Tensor2D;
      const kernelGate = (t: tf.Tensor) => swigluWithGradient(t as tf.Tensor2D) as tf.Tensor2D;
      expect(maxAbsDiff(kernelNorm(x).dataSync(), referenceNorm(x, weight, 1e-5).dataSync())).toBeLessThan(1e-5);
      expect(maxAbsDiff(kernelGate(x).dataSync(), referenceGate(x).dataSync())).toBeLessThan(1e-5);
      const normGrad = tf.grad(kernelNorm)(x, dy);
      const normRef = tf.grad((t: tf.Tensor) => referenceNorm(t as tf.Tensor2D, weight, 1e-5))(x, dy);
      expect(maxAbsDiff(normGrad.dataSync(), normRef.dataSync())).toBeLessThan(1e-5);
      const gateGrad = tf.grad(kernelGate)(x, dGate);
      const gateRef = tf.grad((t: tf.Tensor) => referenceGate(t as tf.Tensor2D))(x, dGate);
      expect(maxAbsDiff(gateGrad.dataSync(), gateRef.dataSync())).toBeLessThan(1e-5);
    });
  });

  it.each([
    [4, 12, 64],
    [3, 2, 16],
  ])('RoPE with its gradient matches the tfjs ops and their gradient for %i positions of %i heads of %i', (N, heads, D) => {
    ensureTrainingGradients();
    tf.tidy(() => {
      const x = tf.randomNormal([N, heads, D], 0, 2, 'float32', 31) as tf.Tensor3D;
      // Angles drawn per element, so that the two halves' tables differ, as the formula allows.
      const angles = tf.randomUniform([N, heads, D], -40, 40, 'float32', 32);
      const [cos, sin] = [tf.mul(tf.cos(angles), 0.125), tf.sin(angles)] as tf.Tensor3D[];
      const dy = tf.randomNormal([N, heads, D], 0, 1, 'float32', 33) as tf.Tensor3D;
      const kernel = (t: tf.Tensor) => ropeWithGradient(t as tf.Tensor3D, cos, sin) as tf.Tensor3D;
      expect(Array.from(kernel(x).dataSync())).toEqual(Array.from(referenceRope(x, cos, sin).dataSync()));
      const grad = tf.grad(kernel)(x, dy);
      const expected = tf.grad((t: tf.Tensor) => referenceRope(t as tf.Tensor3D, cos, sin))(x, dy);
      expect(maxAbsDiff(grad.dataSync(), expected.dataSync())).toBeLessThan(1e-5);
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
        const t3 = tf.reshape(t, [2, 1, 8]) as tf.Tensor3D;
        expect(rope(t3, t3, t3)).toBeNull();
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
        const ones = tf.ones([2, 1, 8]) as tf.Tensor3D;
        expect(rope(ones, ones, ones)).toBeNull();
      });
    } finally {
      await useBackend('wasm');
    }
  });
});
