import * as tf from '@tensorflow/tfjs-core';
import { outputSlot } from '../../src/ops/kept-outputs';
import { KeptProducts } from '../../src/training/checkpointing';
import { useBackend } from '../helpers';

describe('KeptProducts', () => {
  beforeAll(() => useBackend('wasm'));

  const down = { name: 'down' };
  const ones = (value: number) => tf.fill([2, 4], value) as tf.Tensor2D;

  it('keeps outputs while recording and within its budget, and hands each out once, in pass order, on the recompute', () => {
    const products = new KeptProducts(3 * 4 * 8, new Set([down])); // three [2, 4] float32 outputs
    const before = tf.memory().numTensors;
    expect(outputSlot()).toBeNull(); // no pass in effect
    tf.tidy(() => {
      products.during(0, () => {
        const slots = [outputSlot(), outputSlot(), outputSlot(down)];
        expect(slots.map((s) => s?.unread)).toEqual([false, false, false]); // the first pass reads every value
        expect(slots[0]?.take()).toBeNull(); // still recording
        slots.forEach((s, i) => s?.keep(ones(i + 1))); // the residual projection's output is never kept
      });
      products.during(1, () => outputSlot()?.keep(ones(4)));
      products.during(2, () => outputSlot()?.keep(ones(5))); // over the budget: not kept
    });
    expect(tf.memory().numTensors).toBe(before + 3);
    expect(products.keptBytes).toBe(3 * 4 * 8);
    products.replay();
    tf.tidy(() => {
      products.during(2, () => expect(outputSlot()?.take()).toBeNull());
      products.during(0, () => {
        const slots = [outputSlot(), outputSlot(), outputSlot(down)];
        expect(slots.map((s) => s?.unread)).toEqual([false, false, true]); // the recompute reads only gradients through it
        expect(slots[2]?.take()).toBeNull();
        slots[2]?.keep(ones(6)); // recording is over: not kept
        expect(Array.from((slots[1]?.take() as tf.Tensor).dataSync())).toEqual(new Array(8).fill(2));
        expect(slots[1]?.take()).toBeNull(); // handed out once
      });
    });
    expect(tf.memory().numTensors).toBe(before + 2);
    products.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });
});
