import * as tf from '@tensorflow/tfjs-core';
import { addLoraDeltas, LoraPart, loraGradients, loraKernelsApply } from '../../src/kernels/lora';
import { FrozenLinear, LowRankAdapter } from '../../src/model/linear';
import { linearBackward } from '../../src/ops/linear-gradient';
import { ensureTrainingGradients } from '../../src/training/gradients';
import { maxAbsDiff, useBackend } from '../helpers';

/** Parts of `widths` columns side by side; `present[i]` false leaves part i without an adapter. */
function partsOf(K: number, r: number, widths: number[], present: boolean[], scaled: boolean, seed: number): LoraPart[] {
  let col = 0;
  return widths.flatMap((width, i) => {
    const part: LoraPart[] = present[i]
      ? [
          {
            aT: tf.randomNormal([K, r], 0, 0.5, 'float32', seed + 2 * i) as tf.Tensor2D,
            bT: tf.randomNormal([r, width], 0, 0.5, 'float32', seed + 2 * i + 1) as tf.Tensor2D,
            scale: scaled ? tf.scalar(2 / r) : null,
            col,
            width,
          },
        ]
      : [];
    col += width;
    return part;
  });
}

/** The same with tfjs ops: y + s (x aT) bT on each part's columns. */
function deltasWithOps(y: tf.Tensor2D, x: tf.Tensor2D, parts: LoraPart[]): tf.Tensor2D {
  return tf.tidy(() => {
    const columns: tf.Tensor2D[] = [];
    let col = 0;
    for (const p of [...parts].sort((a, b) => a.col - b.col)) {
      if (p.col > col) columns.push(tf.slice(y, [0, col], [-1, p.col - col]));
      const delta = tf.mul(tf.matMul(tf.matMul(x, p.aT), p.bT), p.scale ?? 1);
      columns.push(tf.add(tf.slice(y, [0, p.col], [-1, p.width]), delta) as tf.Tensor2D);
      col = p.col + p.width;
    }
    if (col < y.shape[1]) columns.push(tf.slice(y, [0, col], [-1, y.shape[1] - col]));
    return tf.concat(columns, 1);
  });
}

/** dx + sum dh aT^T and each part's [daT, dbT] with tfjs ops: g = dy's columns, dbT = s h^T g, dh = s g bT^T, daT = x^T dh. */
function gradientsWithOps(dx: tf.Tensor2D, x: tf.Tensor2D, dy: tf.Tensor2D, parts: LoraPart[]): tf.Tensor2D[] {
  return tf.tidy(() => {
    let dxSum = dx;
    const grads: tf.Tensor2D[] = [];
    for (const p of parts) {
      const s = p.scale ?? tf.scalar(1);
      const g = tf.slice(dy, [0, p.col], [-1, p.width]);
      const h = tf.matMul(x, p.aT);
      const dh = tf.mul(tf.matMul(g, p.bT, false, true), s) as tf.Tensor2D;
      grads.push(tf.matMul(x, dh, true, false), tf.mul(tf.matMul(h, g, true, false), s) as tf.Tensor2D);
      dxSum = tf.add(dxSum, tf.matMul(dh, p.aT, false, true));
    }
    return [dxSum, ...grads];
  });
}

describe('LoRA kernels (wasm)', () => {
  beforeAll(() => useBackend('wasm'));

  it.each([
    // M, K, r, part widths, present, scaled: q|k|v with an adapter on q and v only; one part of 40 (16 + 16 + 8 columns); rank 4, unscaled.
    [7, 24, 8, [32, 8, 8], [true, false, true], true],
    [13, 16, 8, [40], [true], true],
    [4, 12, 4, [16, 20], [true, true], false],
    [1, 8, 12, [8], [true], true],
  ])('match tfjs ops for M %i, K %i, r %i, parts %j (adapters %j, scaled %s)', (M, K, r, widths, present, scaled) => {
    tf.tidy(() => {
      const parts = partsOf(K, r, widths, present, scaled, 3);
      const N = widths.reduce((a, b) => a + b, 0);
      const x = tf.randomNormal([M, K], 0, 1, 'float32', 1) as tf.Tensor2D;
      const y = tf.randomNormal([M, N], 0, 1, 'float32', 2) as tf.Tensor2D;
      const dy = tf.randomNormal([M, N], 0, 1, 'float32', 5) as tf.Tensor2D;
      const dx = tf.randomNormal([M, K], 0, 1, 'float32', 6) as tf.Tensor2D;
      expect(loraKernelsApply(x, parts)).toBe(true);

      const yBefore = y.dataSync().slice();
      expect(maxAbsDiff(addLoraDeltas(y, x, parts).dataSync(), deltasWithOps(y, x, parts).dataSync())).toBeLessThan(1e-4);
      expect(Array.from(y.dataSync())).toEqual(Array.from(yBefore)); // y itself is untouched

      const { dx: share, grads } = loraGradients(x, dy, parts);
      const dxOut = tf.add(dx, share);
      const [dxRef, ...gradsRef] = gradientsWithOps(dx, x, dy, parts);
      expect(maxAbsDiff(dxOut.dataSync(), dxRef.dataSync())).toBeLessThan(1e-4);
      expect(grads.map((g) => g.shape)).toEqual(gradsRef.map((g) => g.shape));
      grads.forEach((g, i) => expect(maxAbsDiff(g.dataSync(), gradsRef[i].dataSync())).toBeLessThan(1e-4));
      parts.forEach((p) => p.scale?.dispose());
    });
  });

  it('leave ranks, widths or K that are not multiples of 4 to tfjs ops', () => {
    tf.tidy(() => {
      const x = tf.zeros([3, 8]) as tf.Tensor2D;
      expect(loraKernelsApply(x, partsOf(8, 2, [8], [true], false, 1))).toBe(false);
      expect(loraKernelsApply(x, partsOf(8, 4, [6], [true], false, 1))).toBe(false);
      expect(loraKernelsApply(tf.zeros([3, 6]) as tf.Tensor2D, partsOf(6, 4, [8], [true], false, 1))).toBe(false);
      expect(loraKernelsApply(x, [])).toBe(false);
    });
  });

  it('a projection they leave to tfjs ops (widths and K of 6 and 10, rank 8) trains by the gradients of the plain formula', () => {
    ensureTrainingGradients();
    tf.tidy(() => {
      const [M, K, r, widths] = [5, 6, 8, [10, 6]];
      const N = widths[0] + widths[1];
      const w = tf.randomNormal([K, N], 0, 1, 'float32', 11) as tf.Tensor2D;
      const factors = widths.flatMap((width, i) => [tf.randomNormal([K, r], 0, 0.5, 'float32', 12 + 2 * i), tf.randomNormal([r, width], 0, 0.5, 'float32', 13 + 2 * i)] as tf.Tensor2D[]);
      const scale = tf.scalar(2 / r);
      const adapter = (aT: tf.Tensor2D, bT: tf.Tensor2D): LowRankAdapter => ({ lowRank: true, aT, bT, scaleFactor: scale, forward: (x) => tf.mul(tf.matMul(tf.matMul(x, aT), bT), scale) as tf.Tensor2D });
      const l = new FrozenLinear(
        widths.map((outFeatures, i) => ({ name: `p${i}`, outFeatures })),
        K,
        w,
        null,
      );
      l.setAdapter('p0', adapter(factors[0], factors[1]));
      l.setAdapter('p1', adapter(factors[2], factors[3]));
      l.enableBackward();
      const x = tf.randomNormal([M, K], 0, 1, 'float32', 17) as tf.Tensor2D;
      const dy = tf.randomNormal([M, N], 0, 1, 'float32', 18) as tf.Tensor2D;
      expect(loraKernelsApply(x, l.adapterParts(M) as LoraPart[])).toBe(false);
      // The reference: x W plus each part's s (x aT) bT, differentiated by tfjs's own gradients.
      const formula = (x: tf.Tensor, a0: tf.Tensor, b0: tf.Tensor, a1: tf.Tensor, b1: tf.Tensor) =>
        tf.add(tf.matMul(x as tf.Tensor2D, w), tf.mul(tf.concat([tf.matMul(tf.matMul(x as tf.Tensor2D, a0 as tf.Tensor2D), b0 as tf.Tensor2D), tf.matMul(tf.matMul(x as tf.Tensor2D, a1 as tf.Tensor2D), b1 as tf.Tensor2D)], 1), scale));
      const want = tf.grads(formula)([x, ...factors], dy);
      const got = tf.grads((input: tf.Tensor) => l.forward(input as tf.Tensor2D))([x, ...factors], dy);
      const explicit = linearBackward(l, x, dy);
      expect(maxAbsDiff(l.forward(x).dataSync(), formula(x, ...(factors as [tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor])).dataSync())).toBeLessThan(1e-4);
      want.forEach((g, i) => expect(maxAbsDiff(got[i].dataSync(), g.dataSync())).toBeLessThan(1e-4));
      expect(maxAbsDiff(explicit.dx.dataSync(), want[0].dataSync())).toBeLessThan(1e-4);
      factors.forEach((f, i) => expect(maxAbsDiff((explicit.grads.get(f) as tf.Tensor).dataSync(), want[i + 1].dataSync())).toBeLessThan(1e-4));
      l.dispose();
    });
  });
});
