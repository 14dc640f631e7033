import * as tf from '@tensorflow/tfjs-core';
import { loadModel } from '../src/loader';
import { contextTensors } from '../src/model/llama';
import { KeptConstants } from '../src/model/kept-constants';
import { MASKED } from '../src/model/kv-cache';
import { makeTiny, useBackend } from './helpers';

// Constant tensors kept by the numbers they are made from, handed out as clones: a caller
// disposes what it is given, and what is kept lives on for the next caller until it is dropped.

describe('kept constants', () => {
  beforeAll(() => useBackend('cpu'));
  afterAll(() => tf.engine().endScope());

  it('makes once for the same numbers, hands out clones that outlive a drop, and frees everything once all are disposed', async () => {
    const kept = new KeptConstants<{ t: tf.Tensor1D }>(2);
    const before = tf.memory().numTensors;
    let made = 0;
    const ask = (n: number) => kept.get([n], () => ({ t: tf.tensor1d([n, ++made]) })).t;
    const first = ask(1);
    const again = ask(1);
    expect(made).toBe(1);
    expect(await again.data()).toEqual(new Float32Array([1, 1]));
    first.dispose();
    expect(await again.data()).toEqual(new Float32Array([1, 1]));
    // Two more lists drop the first's tensor: its clone still reads it.
    ask(2).dispose();
    ask(3).dispose();
    expect(await again.data()).toEqual(new Float32Array([1, 1]));
    expect(await ask(1).data()).toEqual(new Float32Array([1, 4]));
    again.dispose();
    kept.dispose();
    // The last ask(1)'s clone is still the caller's.
    expect(tf.memory().numTensors).toBe(before + 1);
  });

  it("keeps an uncached pass's causal mask and RoPE tables for the next pass of the same shape", async () => {
    const lm = await loadModel(makeTiny('kept-constants'));
    try {
      const before = tf.memory().numTensors;
      const first = lm.model.passContext(2, 40);
      const mask = await first.mask.data();
      expect(first.mask.shape).toEqual([1, 1, 40, 40]);
      expect([mask[1], mask[40], mask[40 * 40 - 1]]).toEqual([MASKED, 0, 0]);
      const cos = await first.cos.data();
      contextTensors(first).forEach((t) => t.dispose());
      const second = lm.model.passContext(2, 40);
      expect(await second.mask.data()).toEqual(mask);
      expect(await second.cos.data()).toEqual(cos);
      contextTensors(second).forEach((t) => t.dispose());
      // The model keeps the mask and the two tables until it is disposed; a short pass's it makes each time.
      expect(tf.memory().numTensors).toBe(before + 3);
      contextTensors(lm.model.passContext(1, 8)).forEach((t) => t.dispose());
      expect(tf.memory().numTensors).toBe(before + 3);
    } finally {
      lm.dispose();
    }
  });
});
