import * as tf from '@tensorflow/tfjs-core';
import { heapOffset, WasmBackendInternals } from '../src/kernels/wasm-heap';
import { ensureTrainingGradients } from '../src/training/gradients';
import { useBackend } from './helpers';

describe('Identity on wasm', () => {
  beforeAll(async () => {
    await useBackend('wasm');
    ensureTrainingGradients();
  });

  it('shares the buffer (a clone is not a copy), and each holder keeps it until the last lets go', () => {
    const wasm = tf.backend() as unknown as WasmBackendInternals;
    const x = tf.tensor1d([1, 2, 3, 4]);
    const copy = tf.clone(x);
    expect(heapOffset(wasm, copy)).toBe(heapOffset(wasm, x));
    x.dispose();
    expect(Array.from(copy.dataSync())).toEqual([1, 2, 3, 4]);
    // What a gradient tape saves is such a clone: the gradient through it is unchanged.
    const w = tf.tensor1d([0.5, -1, 2, 3]);
    const grad = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(tf.clone(v), w)))(copy);
    expect(Array.from(grad.dataSync())).toEqual([0.5, -1, 2, 3]);
    tf.dispose([copy, w, grad]);
  });
});
