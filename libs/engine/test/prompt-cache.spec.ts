import * as tf from '@tensorflow/tfjs-core';
import { DecodeBatch } from '../src/decode-batch';
import { LoadedModel, loadModel } from '../src/loader';
import { PromptCache } from '../src/prompt-cache';
import { makeTiny, maxAbsDiff, rowsOf, useBackend } from './helpers';

const SYSTEM = [1, 300, 301, 302, 303, 304, 305, 306];
const ASK = [...SYSTEM, 40, 41, 42];
const OTHER = [...SYSTEM, 50, 51];
const CONTINUATION = [60, 61, 62, 63];

describe('prompt reuse (wasm)', () => {
  let lm: LoadedModel;

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('prompt-cache'));
  });
  afterAll(() => lm.dispose());

  /** Logits at every position of one uncached pass. */
  function fullLogits(tokens: number[]): Float32Array[] {
    const t = lm.model.forward([tokens]);
    const rows = rowsOf(t);
    t.dispose();
    return rows;
  }

  /** Joins `prompt` as sequence `id`, then decodes CONTINUATION; every logits row the batch gave. */
  async function decode(batch: DecodeBatch<string>, id: string, prompt: number[], cache: PromptCache | null, namespace = ''): Promise<Float32Array[]> {
    const out = [await batch.join(id, prompt, cache ? { cache, namespace } : undefined)];
    for (const token of CONTINUATION) {
      const logits = await batch.step(new Map(batch.ids.map((member) => [member, token])));
      out.push(logits.get(id) as Float32Array);
    }
    batch.leave(id);
    return out;
  }

  function expectSameAsUncached(got: Float32Array[], prompt: number[]): void {
    const expected = fullLogits([...prompt, ...CONTINUATION]).slice(prompt.length - 1);
    got.forEach((row, i) => expect(maxAbsDiff(row, expected[i])).toBeLessThan(1e-4));
  }

  it('serves a prompt held whole without prefilling it, with the logits of its first prefill', async () => {
    const cache = new PromptCache(64 * 2 ** 20);
    const batch = new DecodeBatch<string>(lm.model);
    const first = await decode(batch, 'a', ASK, cache);
    expect(cache.size).toBe(1);
    const forward = jest.spyOn(lm.model, 'forward');
    try {
      const again = await decode(batch, 'b', ASK, cache);
      // One forward per decode step, none for the prompt.
      expect(forward).toHaveBeenCalledTimes(CONTINUATION.length);
      expect(again[0]).toEqual(first[0]);
      expectSameAsUncached(again, ASK);
    } finally {
      forward.mockRestore();
      batch.dispose();
      cache.clear();
    }
  });

  it('prefills only what follows the longest held beginning, and gives what a full prefill gives', async () => {
    const cache = new PromptCache(64 * 2 ** 20);
    const batch = new DecodeBatch<string>(lm.model);
    await decode(batch, 'a', ASK, cache);
    const forward = jest.spyOn(lm.model, 'forward');
    try {
      const got = await decode(batch, 'b', OTHER, cache);
      const prefill = forward.mock.calls[0][0];
      expect(prefill).toEqual([OTHER.slice(SYSTEM.length)]);
      expectSameAsUncached(got, OTHER);
      // A prompt that is a beginning of a held one still prefills its last token, for its logits.
      forward.mockClear();
      const shorter = await decode(batch, 'c', SYSTEM, cache);
      expect(forward.mock.calls[0][0]).toEqual([[SYSTEM[SYSTEM.length - 1]]]);
      expectSameAsUncached(shorter, SYSTEM);
    } finally {
      forward.mockRestore();
      batch.dispose();
      cache.clear();
    }
  });

  it('shares prompts only within one namespace (adapter)', async () => {
    const cache = new PromptCache(64 * 2 ** 20);
    const batch = new DecodeBatch<string>(lm.model);
    await decode(batch, 'a', ASK, cache, 'adapter-1');
    expect(cache.lookup(lm.model, 'adapter-2', ASK)).toBeNull();
    const hit = cache.lookup(lm.model, 'adapter-1', ASK);
    expect(hit?.length).toBe(ASK.length);
    hit?.cache.dispose();
    batch.dispose();
    cache.clear();
  });

  it('stays within its memory, dropping the least recently used prompt first, and frees what it drops', async () => {
    const probing = new DecodeBatch<string>(lm.model);
    const probe = new PromptCache(2 ** 30);
    await decode(probing, 'probe', ASK, probe);
    probing.dispose();
    const oneEntry = probe.bytes;
    probe.clear();
    expect(probe.bytes).toBe(0);

    const before = tf.memory().numTensors;
    const batch = new DecodeBatch<string>(lm.model);
    const cache = new PromptCache(Math.floor(oneEntry * 2.5));
    // No two share a first token: a lookup that finds a common beginning counts as a use.
    const prompts = [ASK, [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17], [70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80]];
    for (const [i, prompt] of prompts.entries()) await decode(batch, `p${i}`, prompt, cache);
    expect(cache.size).toBe(2);
    expect(cache.bytes).toBeLessThanOrEqual(cache.maxBytes);
    expect(cache.lookup(lm.model, '', ASK)).toBeNull();
    cache.clear();
    batch.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('replaces a held prompt by a longer one that begins with it, and forgets a model on clear(model)', async () => {
    const cache = new PromptCache(64 * 2 ** 20);
    const batch = new DecodeBatch<string>(lm.model);
    await decode(batch, 'a', SYSTEM, cache);
    await decode(batch, 'b', ASK, cache);
    expect(cache.size).toBe(1);
    cache.clear(lm.model);
    expect(cache.size).toBe(0);
    expect(cache.bytes).toBe(0);
    batch.dispose();
  });
});
