import * as tf from '@tensorflow/tfjs-core';
import { DecodeBatch } from '../src/decode-batch';
import { LoadedModel, loadModel } from '../src/loader';
import { sequenceLogprobs } from '../src/model/logprobs';
import { PromptCache } from '../src/prompt-cache';
import { readModelLimits } from '../src/prompt';
import { makeTiny, maxAbsDiff, rowsOf, useBackend } from './helpers';

describe('prompt scores from the prefill (wasm)', () => {
  let dir: string;
  let lm: LoadedModel;

  beforeAll(async () => {
    await useBackend('wasm');
    dir = makeTiny('prompt-scores');
    lm = await loadModel(dir);
  });
  afterAll(() => lm.dispose());

  // Longer than one prefill chunk (256 positions), so the scores span two chunks.
  const prompt = Array.from({ length: 300 }, (_, i) => (i * 37 + 11) % 512);

  it("gives the training forward's logprobs of every prompt token, and the last position's logits", async () => {
    const batch = new DecodeBatch<string>(lm.model);
    try {
      const { logits, scores } = await batch.joinScored('a', prompt, 0);
      expect(scores.top).toBeNull();
      expect(scores.logprobs).toHaveLength(prompt.length - 1);
      expect(maxAbsDiff(scores.logprobs, await sequenceLogprobs(lm.model, prompt))).toBeLessThan(1e-4);
      const full = lm.model.forward([prompt]);
      const rows = rowsOf(full);
      full.dispose();
      expect(maxAbsDiff(logits, rows[rows.length - 1])).toBeLessThan(1e-4);
      // The sequence decodes on from its cache as a joined one does.
      const plain = new DecodeBatch<string>(lm.model);
      try {
        await plain.join('b', prompt);
        const [x, y] = [await batch.step(new Map([['a', 5]])), await plain.step(new Map([['b', 5]]))];
        expect(maxAbsDiff(x.get('a') as Float32Array, y.get('b') as Float32Array)).toBeLessThan(1e-4);
      } finally {
        plain.dispose();
      }
    } finally {
      batch.dispose();
    }
  });

  it('gives the k most likely tokens of each position, best first, and stores the prompt for reuse', async () => {
    const cache = new PromptCache(64 * 2 ** 20);
    const batch = new DecodeBatch<string>(lm.model);
    try {
      const short = prompt.slice(0, 20);
      const { scores } = await batch.joinScored('a', short, 3, { cache, namespace: '' });
      const top = scores.top as NonNullable<typeof scores.top>;
      expect(top.k).toBe(3);
      const logSoftmax = tf.tidy(() => tf.logSoftmax(lm.model.forward([short])));
      const rows = rowsOf(logSoftmax as tf.Tensor2D);
      logSoftmax.dispose();
      for (let t = 0; t < short.length - 1; t++) {
        const expected = [...rows[t].keys()].sort((i, j) => rows[t][j] - rows[t][i]).slice(0, 3);
        expect([...top.ids.slice(t * 3, t * 3 + 3)]).toEqual(expected);
        expect(maxAbsDiff(top.logprobs.slice(t * 3, t * 3 + 3), expected.map((i) => rows[t][i]))).toBeLessThan(1e-4);
        expect(scores.logprobs[t]).toBeCloseTo(rows[t][short[t + 1]], 4);
      }
      await batch.join('b', short, { cache, namespace: '' });
      expect(batch.reusedTokens('b')).toBe(short.length);
    } finally {
      batch.dispose();
    }
  });

  it("reads a model's vocabulary size and context window from its config alone", () => {
    expect(readModelLimits(dir)).toEqual({ vocabSize: 512, contextWindow: 2048 });
  });
});
