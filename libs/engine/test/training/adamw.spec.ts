import * as tf from '@tensorflow/tfjs-core';
import { SeededRandom } from '../../src/random';
import { AdamW, REFERENCE_ADAMW } from '../../src/training/adamw';
import { useBackend } from '../helpers';

/** LoRA-like shapes, and one whose size (15) is not a multiple of the kernel's 4 lanes. */
const SHAPES = [
  [8, 576],
  [1536, 8],
  [3, 5],
];
const STEPS = 4;

function draw(seed: number, scale: number): Float32Array[] {
  const rng = new SeededRandom(seed);
  return SHAPES.map(([r, c]) => Float32Array.from({ length: r * c }, () => scale * rng.normal()));
}

/** Parameters and norms after STEPS steps of the reference AdamW on the current backend, from the same seeded values. */
async function train(): Promise<{ params: number[][]; norms: number[] }> {
  const start = draw(1, 0.02);
  const params = tf.tidy(() => SHAPES.map(([r, c], i) => tf.variable(tf.tensor2d(start[i], [r, c]))));
  const optimizer = new AdamW(REFERENCE_ADAMW);
  const norms: number[] = [];
  for (let step = 0; step < STEPS; step++) {
    // Gradients whose norm is both under and over the clipping bound (0.1) across the steps.
    const grads = draw(10 + step, step % 2 ? 2e-4 : 0.5).map((g, i) => tf.tensor2d(g, SHAPES[i] as [number, number]));
    norms.push(await optimizer.apply(params, grads, 1e-3 * (step + 1)));
    tf.dispose(grads);
  }
  const values = params.map((p) => Array.from(p.dataSync()));
  optimizer.dispose();
  tf.dispose(params);
  return { params: values, norms };
}

describe('AdamW', () => {
  it('gives the same bits from the wasm kernel as from the JS loop other backends run, clipped or not', async () => {
    await useBackend('cpu');
    const js = await train();
    await useBackend('wasm');
    const before = tf.memory().numTensors;
    const kernel = await train();
    expect(tf.memory().numTensors).toBe(before);

    const bound = REFERENCE_ADAMW.maxGradNorm as number;
    expect(js.norms[0]).toBeGreaterThan(bound);
    expect(js.norms[1]).toBeLessThan(bound);
    expect(kernel.norms).toEqual(js.norms);
    expect(kernel.params).toEqual(js.params);
    // Every parameter moved: the comparison is not between two unchanged copies.
    const start = draw(1, 0.02);
    kernel.params.forEach((p, i) => p.forEach((value, j) => expect(value).not.toBe(start[i][j])));
  });
});
