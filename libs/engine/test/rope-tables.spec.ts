import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../src/config';
import { KEPT_POSITIONS, StepRopeTables } from '../src/kernels/step-rope-tables';
import { Rope } from '../src/model/rope';
import { useBackend } from './helpers';

// Rope.tables: cos and sin of each position for the q heads (times the attention scale) and
// the k heads side by side, each position's values computed once; the tables of long position
// lists kept, and handed out as clones that the caller disposes.

const config = { numHeads: 3, numKvHeads: 1, headDim: 8, ropeTheta: 10_000, ropeScaling: null, queryPreAttnScalar: 16 } as unknown as ModelConfig;

/** The tables' values written out one by one from the definition. */
function expected(rope: Rope, positions: number[]): { cos: Float32Array; sin: Float32Array } {
  const { numHeads, numKvHeads, headDim } = config;
  const heads = numHeads + numKvHeads;
  const cos = new Float32Array(positions.length * heads * headDim);
  const sin = new Float32Array(cos.length);
  positions.forEach((p, n) => {
    for (let head = 0; head < heads; head++) {
      const scale = head < numHeads ? 1 / 4 : 1;
      for (let j = 0; j < headDim; j++) {
        const angle = Math.fround(p * rope.invFreq[j % (headDim / 2)]);
        cos[(n * heads + head) * headDim + j] = Math.fround(Math.cos(angle)) * scale;
        sin[(n * heads + head) * headDim + j] = Math.fround(Math.sin(angle)) * scale;
      }
    }
  });
  return { cos, sin };
}

describe('RoPE tables', () => {
  beforeAll(() => useBackend('cpu'));
  afterAll(() => tf.engine().endScope());

  it.each([
    ['a few positions, repeated and out of order', [5, 0, 5, 1, 0, 9]],
    ['rows of a training step (kept)', Array.from({ length: 48 }, (_, i) => i % 12)],
    ['a long prompt continuing a cache (kept)', Array.from({ length: 40 }, (_, i) => 1000 + i)],
  ])('hold each position\'s cos and sin, the q heads scaled: %s', async (_, positions) => {
    const rope = new Rope(config);
    try {
      const { cos, sin } = rope.tables(positions);
      const want = expected(rope, positions);
      expect(cos.shape).toEqual([positions.length, 4, 8]);
      expect(await cos.data()).toEqual(want.cos);
      expect(await sin.data()).toEqual(want.sin);
      tf.dispose([cos, sin]);
    } finally {
      rope.dispose();
    }
  });

  it('keeps the tables of a long position list: the caller disposes its clones, the next caller gets the same values, and dispose frees them', async () => {
    const positions = Array.from({ length: 64 }, (_, i) => i % 32);
    const before = tf.memory().numTensors;
    const rope = new Rope(config);
    const first = rope.tables(positions);
    const values = await first.cos.data();
    tf.dispose([first.cos, first.sin]);
    // The kept tables outlive the caller's clones.
    expect(tf.memory().numTensors).toBe(before + 1 + 2);
    const again = rope.tables(positions);
    expect(tf.memory().numTensors).toBe(before + 1 + 4);
    expect(await again.cos.data()).toEqual(values);
    tf.dispose([again.cos, again.sin]);
    // Another list's tables are made, not the kept ones given.
    const other = rope.tables(positions.map((p) => p + 1));
    expect(await other.cos.data()).not.toEqual(values);
    tf.dispose([other.cos, other.sin]);
    rope.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('keeps the tables of the four position lists most recently asked for, and makes short lists\' at each call', () => {
    const rope = new Rope(config);
    const list = (offset: number) => Array.from({ length: 32 }, (_, i) => i + offset);
    const ask = (offset: number) => tf.dispose(Object.values(rope.tables(list(offset))));
    const before = tf.memory().numTensors;
    for (let offset = 0; offset < 6; offset++) ask(offset);
    expect(tf.memory().numTensors).toBe(before + 4 * 2);
    tf.dispose(Object.values(rope.tables([1, 2, 3])));
    expect(tf.memory().numTensors).toBe(before + 4 * 2);
    rope.dispose();
    expect(tf.memory().numTensors).toBe(before - 1);
  });
});

describe("an encoded decoding step's RoPE tables", () => {
  beforeAll(() => useBackend('cpu'));

  it("hold, for each token, the q head's and the k head's cos and sin of Rope.tables, positions kept or not, in any order", async () => {
    const rope = new Rope(config);
    const step = new StepRopeTables(rope.invFreq, 1 / 4);
    const half = config.headDim / 2;
    // A decoding batch's scattered positions, a prompt's run (kept, copied whole), then positions past those kept.
    const asked = [[7, 3, 0, 7], Array.from({ length: 300 }, (_, i) => 40 + i), [KEPT_POSITIONS - 2, KEPT_POSITIONS - 1, KEPT_POSITIONS, 3, KEPT_POSITIONS + 5000]];
    try {
      for (const positions of asked) {
        const got = step.tables(positions);
        const { cos, sin } = rope.tables(positions);
        const [c, s] = [await cos.data(), await sin.data()];
        tf.dispose([cos, sin]);
        const want = new Float32Array(got.length);
        // Rope.tables' [N, 4 heads, D]: the q heads' first, the k head's last; each head's halves repeat.
        positions.forEach((_, n) => {
          for (let j = 0; j < half; j++) {
            want[n * 4 * half + j] = c[n * 4 * 8 + j];
            want[n * 4 * half + half + j] = s[n * 4 * 8 + j];
            want[n * 4 * half + 2 * half + j] = c[(n * 4 + 3) * 8 + j];
            want[n * 4 * half + 3 * half + j] = s[(n * 4 + 3) * 8 + j];
          }
        });
        expect(Array.from(got)).toEqual(Array.from(want));
      }
    } finally {
      rope.dispose();
    }
  });
});
