import { exponentials } from '../src/kernels/softmax';
import { SeededRandom } from '../src/random';

const largest = (x: Float32Array) => x.reduce((m, v) => Math.max(m, v), -Infinity);

/** Logits as a language model's are spread (normal, deviation 3), seeded. */
function modelLikeLogits(n: number, seed: number): Float32Array {
  const rng = new SeededRandom(seed);
  return Float32Array.from({ length: n }, () => 3 * rng.normal());
}

describe('exponentials (the sampler\'s WebAssembly kernel)', () => {
  it.each([
    [49152, 1],
    [49151, 0.7],
    [7, 2],
  ])('gives exp((x - max) / T) to float32 precision, in log space as logprobs use them, and their sum (n %d, T %d)', (n, temperature) => {
    const logits = modelLikeLogits(n, n);
    const { values, max, sum } = exponentials(logits, temperature);
    const m = largest(logits);
    expect(max).toBe(m);
    let reference = 0;
    let worst = 0;
    for (let i = 0; i < n; i++) {
      const e = Math.exp((logits[i] - m) / temperature);
      reference += e;
      // The argument (x - max) / T is rounded to float32 first: an error of a few 1e-6 in the
      // log of the smallest weights (arguments near -40), nothing in the large ones.
      worst = Math.max(worst, Math.abs(Math.log(values[i]) - (logits[i] - m) / temperature));
    }
    expect(values).toHaveLength(n);
    expect(worst).toBeLessThan(1e-5);
    expect(Math.abs(sum - reference) / reference).toBeLessThan(1e-6);
  });

  it('gives 0 for a forbidden token (-Infinity), and an all-forbidden row is all zeros with max -Infinity', () => {
    const logits = Float32Array.from([1, -Infinity, 0, -Infinity, 2]);
    const { values, sum } = exponentials(logits, 1);
    expect(Array.from(values)).toEqual([expect.closeTo(Math.exp(-1), 6), 0, expect.closeTo(Math.exp(-2), 6), 0, 1]);
    expect(sum).toBeCloseTo(1 + Math.exp(-1) + Math.exp(-2), 6);
    const none = exponentials(Float32Array.from([-Infinity, -Infinity]), 1);
    expect(none.max).toBe(-Infinity);
    expect(none.sum).toBe(0);
    expect(Array.from(none.values)).toEqual([0, 0]);
  });

  it('grows its memory for a larger vocabulary, and leaves the caller\'s logits untouched', () => {
    const logits = modelLikeLogits(151936, 3);
    const copy = Float32Array.from(logits);
    const { values } = exponentials(logits, 1);
    expect(values).toHaveLength(151936);
    expect(values[151935]).toBeCloseTo(Math.exp(logits[151935] - largest(logits)), 6);
    expect(logits).toEqual(copy);
  });
});
