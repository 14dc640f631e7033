import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { KVCache, MASKED } from '../src/model/kv-cache';

/**
 * A step's mask (KVCache.stepMask) against its definition: a row's valid columns hold its
 * positions 0, 1, 2... in column order; token t of a step, at position p = the row's length + t,
 * sees a column or a token of the step at position k where p - window < k <= p. Rows of
 * different lengths merged into one cache leave columns a row does not use.
 */
function expected(valid: Uint8Array[], lengths: number[], T: number, window: number): Float32Array {
  const W = valid[0]?.length ?? 0;
  const total = W + T;
  const mask = new Float32Array(valid.length * T * total).fill(MASKED);
  valid.forEach((rowValid, b) => {
    for (let t = 0; t < T; t++) {
      const p = lengths[b] + t;
      const sees = (k: number) => p - window < k && k <= p;
      let k = 0;
      for (let c = 0; c < W; c++) if (rowValid[c] && sees(k++)) mask[(b * T + t) * total + c] = 0;
      for (let u = 0; u < T; u++) if (sees(lengths[b] + u)) mask[(b * T + t) * total + W + u] = 0;
    }
  });
  return mask;
}

/** A one-row cache of `length` tokens (one layer, one KV head of 2). */
function filled(length: number): KVCache {
  const cache = new KVCache(1, { inPlace: false });
  cache.addEmptyRow();
  tf.dispose(cache.beginStep(length).mask);
  // The first append keeps the tensors themselves.
  cache.append(0, tf.zeros([1, 1, length, 2]), tf.zeros([1, 1, length, 2]));
  cache.endStep(length);
  return cache;
}

/** Each row's valid columns, as the cache holds them. */
function validOf(cache: KVCache): Uint8Array[] {
  return (cache as unknown as { valid: Uint8Array[] }).valid;
}

describe('a step mask', () => {
  beforeAll(async () => {
    await selectBackend('cpu');
  });

  it.each([
    [1, Infinity],
    [3, Infinity],
    [1, 4],
    [3, 4],
    [2, 1],
  ])('of %i tokens, window %d, over rows of different lengths with unused columns', (T, window) => {
    const cache = filled(7);
    for (const length of [2, 5]) cache.merge(filled(length));
    // A decoding step: every row gains a column.
    tf.dispose(cache.beginStep(1).mask);
    cache.endStep(1);
    try {
      const valid = validOf(cache);
      expect(valid.some((row) => row.includes(0))).toBe(true);
      expect(Array.from(cache.stepMask(T, window))).toEqual(Array.from(expected(valid, cache.lengths(), T, window)));
    } finally {
      cache.dispose();
    }
  });
});
