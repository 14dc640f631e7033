import * as tf from '@tensorflow/tfjs-core';
import { FrozenLinear, KeptProducts } from '../../src/model/linear';
import { useBackend } from '../helpers';

describe('KeptProducts', () => {
  beforeAll(() => useBackend('wasm'));

  const linear = (name: string) => new FrozenLinear([{ name, outFeatures: 4 }], 4, tf.zeros([4, 4]) as tf.Tensor2D);

  it('keeps outputs while recording and within its budget, and hands each out once on the recompute', () => {
    const [a, b, c] = [linear('a'), linear('b'), linear('c')];
    const products = new KeptProducts(2 * 4 * 8); // two [2, 4] float32 outputs
    const before = tf.memory().numTensors;
    tf.tidy(() => {
      products.keep(a, tf.fill([2, 4], 1) as tf.Tensor2D);
      products.keep(b, tf.fill([2, 4], 2) as tf.Tensor2D);
      products.keep(c, tf.fill([2, 4], 3) as tf.Tensor2D); // over the budget: not kept
      expect(products.take(a)).toBeNull(); // still recording
    });
    expect(tf.memory().numTensors).toBe(before + 2);
    products.replay();
    tf.tidy(() => {
      products.keep(c, tf.fill([2, 4], 3) as tf.Tensor2D); // recording is over: not kept
      expect(Array.from((products.take(b) as tf.Tensor).dataSync())).toEqual(new Array(8).fill(2));
      expect(products.take(b)).toBeNull();
      expect(products.take(c)).toBeNull();
    });
    expect(tf.memory().numTensors).toBe(before + 1);
    products.dispose();
    expect(tf.memory().numTensors).toBe(before);
    [a, b, c].forEach((l) => l.dispose());
  });
});
