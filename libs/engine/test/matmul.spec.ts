import * as fs from 'node:fs';
import * as tf from '@tensorflow/tfjs-core';
import * as matmul from '../src/kernels/matmul';
import { DecodeBatch } from '../src/decode-batch';
import { bf16ToF32, f32ToBf16 } from '../src/dtype';
import { matMulKernelAvailable, PackedWeights, packWeights, packedMatMul } from '../src/kernels/matmul';
import type { MatMulPlanStore } from '../src/kernels/matmul-plan-store';
import { loadModel } from '../src/loader';
import type { LlamaModel } from '../src/model/llama';
import { ensureTrainingGradients } from '../src/training/gradients';
import { makeTiny, maxAbsDiff, useBackend } from './helpers';

/** Logits of decoding (each block in one call, "Decoding a block in one call"): one sequence, then two. */
async function decodeLogits(model: LlamaModel): Promise<number[][]> {
  const batch = new DecodeBatch<number>(model);
  const logits = [await batch.join(0, [1, 2, 3])];
  logits.push((await batch.step(new Map([[0, 4]]))).get(0) as Float32Array);
  await batch.join(1, [5, 6]);
  const both = await batch.step(new Map([[0, 7], [1, 8]]));
  logits.push(both.get(0) as Float32Array, both.get(1) as Float32Array);
  batch.dispose();
  return logits.map((l) => Array.from(l));
}

/** The kernel's result; fails the test where the kernel declines. */
function kernelProduct(x: tf.Tensor2D, w: tf.Tensor2D, bias: tf.Tensor1D | null): tf.Tensor2D {
  const packed = packWeights(w);
  if (!packed) throw new Error('packWeights declined a weight it should cover');
  const out = packedMatMul(x, packed, bias);
  packed.dispose();
  if (!out) throw new Error('packedMatMul declined shapes it should cover');
  return out;
}

describe('packed matMul kernel (wasm)', () => {
  beforeAll(() => useBackend('wasm'));

  it('is active on the wasm backend', () => {
    expect(matMulKernelAvailable()).toBe(true);
  });

  it('splits a fused projection\'s output into column blocks exactly as tf.split does, with its gradient under a tape', () => {
    tf.tidy(() => {
      for (const [M, sizes] of [
        [1, [768, 192]],
        [5, [13, 3, 8]],
      ] as const) {
        const N = sizes.reduce((a, b) => a + b, 0);
        const x = tf.randomNormal([M, N], 0, 1, 'float32', N) as tf.Tensor2D;
        const ours = matmul.splitColumns(x, [...sizes]);
        const theirs = tf.split(x, [...sizes], 1);
        expect(ours.map((t) => t.shape)).toEqual(theirs.map((t) => t.shape));
        ours.forEach((t, i) => expect(Array.from(t.dataSync())).toEqual(Array.from(theirs[i].dataSync())));
      }
      ensureTrainingGradients();
      const x = tf.randomNormal([3, 16], 0, 1, 'float32', 1) as tf.Tensor2D;
      const grad = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(matmul.splitColumns(v as tf.Tensor2D, [4, 12])[1], 2)))(x);
      expect(Array.from(grad.dataSync())).toEqual(Array.from({ length: 48 }, (_, i) => (i % 16 >= 4 ? 2 : 0)));
      const both = tf.grad((v: tf.Tensor) => {
        const [a, b, c] = matmul.splitColumns(v as tf.Tensor2D, [4, 5, 7]);
        return tf.add(tf.add(tf.sum(tf.mul(a, 3)), tf.sum(tf.mul(b, -1))), tf.sum(tf.mul(c, c)));
      })(x);
      const xs = x.dataSync();
      expect(Array.from(both.dataSync())).toEqual(Array.from(xs, (v, i) => (i % 16 < 4 ? 3 : i % 16 < 9 ? -1 : 2 * v)));
      expect(() => matmul.splitColumns(x, [4, 4])).toThrow(/do not add up/);
    });
  });

  // W[k][n] = its index k * N + n, plus a fraction below bf16's precision (f32 panels) or not (bf16).
  const indexWeights = (K: number, N: number, fraction: number) => tf.tensor2d(Float32Array.from({ length: K * N }, (_, i) => i + fraction), [K, N]);
  /** W's index of packed element i, for panels [N/8, K, lanes]. */
  const panelIndex = (i: number, K: number, N: number, lanes: number) => {
    const [p, k, j] = [Math.floor(i / (lanes * K)), Math.floor(i / lanes) % K, i % lanes];
    return k * N + 8 * p + j;
  };

  it('packs W [K, N] into panels of 8 columns', () => {
    tf.tidy(() => {
      const [K, N] = [3, 16];
      const packed = packWeights(indexWeights(K, N, 1 / 4096));
      expect(packed?.bf16).toBe(false);
      expect(packed?.panels?.shape).toEqual([2, K, 8]);
      // Element [p][k][j] holds W[k][8p + j].
      const expected = Array.from({ length: N * K }, (_, i) => panelIndex(i, K, N, 8) + 1 / 4096);
      expect(Array.from(packed?.panels?.dataSync() ?? [])).toEqual(expected);
      packed?.dispose();
    });
  });

  it('packs weights that are all exactly bf16 as bf16 panels: half the size, two weights per float', () => {
    tf.tidy(() => {
      const [K, N] = [3, 16];
      // Integers below 256 and halves of them are exact in bf16's 8 significant bits.
      const packed = packWeights(indexWeights(K, N, 0.5));
      expect(packed?.bf16).toBe(true);
      expect(packed?.panels?.shape).toEqual([2, K, 4]);
      const bits = new Uint32Array((packed?.panels?.dataSync() as Float32Array).buffer);
      const bf16 = (value: number) => new Uint32Array(Float32Array.of(value).buffer)[0] >>> 16;
      // Lane [p][k][j] holds W[k][8p + j] in its low half and W[k][8p + 4 + j] in its high half.
      const expected = Array.from({ length: bits.length }, (_, i) => {
        const n = panelIndex(i, K, N, 4);
        return (bf16(n + 0.5) | (bf16(n + 4 + 0.5) << 16)) >>> 0;
      });
      expect(Array.from(bits)).toEqual(expected);
      packed?.dispose();
    });
  });

  // Rows: every remainder of the 4-row tile (1, 2, 3 left over), and a prefill; K: 1, not
  // multiples of 4 (the kernel steps one k at a time, so none is special), SmolLM2's 576 and 1536.
  const rows = [1, 2, 3, 4, 5, 6, 7, 8, 9, 33];
  const depths = [1, 7, 64, 131, 383, 576, 1536];
  it.each(rows.flatMap((M) => depths.map((K, i) => [M, K, 8 * (1 + ((M + i) % 5)), (M + i) % 2 === 0] as const)))(
    'matches tf.matMul for M %i, K %i, N %i, bias %s',
    (M, K, N, withBias) => {
      tf.tidy(() => {
        const x = tf.randomNormal([M, K], 0, 1, 'float32', M * 1000 + K) as tf.Tensor2D;
        const w = tf.randomNormal([K, N], 0, 1, 'float32', K) as tf.Tensor2D;
        const bias = withBias ? (tf.randomNormal([N], 0, 1, 'float32', N) as tf.Tensor1D) : null;
        const ours = kernelProduct(x, w, bias);
        const ref = bias ? tf.add(tf.matMul(x, w), bias) : tf.matMul(x, w);
        expect(ours.shape).toEqual([M, N]);
        // Sums of K products of unit normals, in another order than XNNPACK's: equal to
        // float32 rounding, relative to their size (sqrt K).
        expect(maxAbsDiff(ours.dataSync(), ref.dataSync())).toBeLessThan(2e-6 * K + 1e-5);
      });
    },
  );

  // bf16 weights (the normals rounded to bf16) give exactly the products of f32 panels of
  // the same weights, in the one arithmetic both formats multiply in: the kernel widens each
  // weight back to the f32 it was.
  it.each(rows.map((M, i) => [M, depths[i % depths.length], 8 * (1 + (M % 5)), M % 2 === 0] as const))(
    'bf16 panels give the same bits as f32 panels for M %i, K %i, N %i, bias %s',
    (M, K, N, withBias) => {
      tf.tidy(() => {
        const x = tf.randomNormal([M, K], 0, 1, 'float32', M * 1000 + K) as tf.Tensor2D;
        const normals = tf.randomNormal([K, N], 0, 1, 'float32', K).dataSync() as Float32Array;
        const w = tf.tensor2d(bf16ToF32(f32ToBf16(normals)), [K, N]);
        const bias = withBias ? (tf.randomNormal([N], 0, 1, 'float32', N) as tf.Tensor1D) : null;
        const [halves, floats] = [packWeights(w), packWeights(w, 'f32')];
        expect([halves?.bf16, floats?.bf16]).toEqual([true, false]);
        for (const oneRowTile of ['narrow', 'wide'] as const) {
          const plan = { ...matmul.DEFAULT_MATMUL_PLAN, oneRowTile };
          const a = packedMatMul(x, halves as PackedWeights, bias, plan) as tf.Tensor2D;
          const b = packedMatMul(x, floats as PackedWeights, bias, plan) as tf.Tensor2D;
          expect(Array.from(a.dataSync())).toEqual(Array.from(b.dataSync()));
          const reference = (bias ? tf.add(tf.matMul(x, w), bias) : tf.matMul(x, w)).dataSync();
          expect(maxAbsDiff(a.dataSync(), reference)).toBeLessThan(2e-6 * K + 1e-5);
        }
        halves?.dispose();
        floats?.dispose();
      });
    },
  );

  // Every tile sums each output in the same order, so a row's product does not depend on the
  // rows beside it: a sequence decodes to the same bits alone (1 x 32 and 1 x 8 tiles) as in
  // a batch (4 x 8, 2 x 8). 9 panels: alone, two 1 x 32 tiles and a 1 x 8 one ('wide'), or
  // nine 1 x 8 tiles ('narrow').
  it.each([false, true].flatMap((bf16) => (['narrow', 'wide'] as const).map((tile) => [bf16, tile] as const)))('gives each row the same bits alone as in a batch of 7 (bf16 %s, %s one-row tile)', (bf16, tile) => {
    const plan = { ...matmul.DEFAULT_MATMUL_PLAN, oneRowTile: tile };
    tf.tidy(() => {
        const [M, K, N] = [7, 131, 8 * 9];
        const x = tf.randomNormal([M, K], 0, 1, 'float32', 7) as tf.Tensor2D;
        const normals = tf.randomNormal([K, N], 0, 1, 'float32', 8).dataSync() as Float32Array;
        const packed = packWeights(tf.tensor2d(bf16 ? bf16ToF32(f32ToBf16(normals)) : normals, [K, N])) as PackedWeights;
        const bias = tf.randomNormal([N], 0, 1, 'float32', 9) as tf.Tensor1D;
        const batch = (packedMatMul(x, packed, bias, plan) as tf.Tensor2D).arraySync();
        for (let r = 0; r < M; r++) {
          const alone = (packedMatMul(tf.slice(x, [r, 0], [1, K]), packed, bias, plan) as tf.Tensor2D).arraySync()[0];
          expect(alone).toEqual(batch[r]);
        }
        packed.dispose();
    });
  });

  /** x [M, K] and W [K, N] of unit normals (W rounded to bf16 with `bf16`) and a bias [N], each seeded by its shape. */
  const operands = (M: number, K: number, N: number, bf16: boolean) => {
    const normals = tf.randomNormal([K, N], 0, 1, 'float32', K).dataSync() as Float32Array;
    return {
      x: tf.randomNormal([M, K], 0, 1, 'float32', M) as tf.Tensor2D,
      w: tf.tensor2d(bf16 ? bf16ToF32(f32ToBf16(normals)) : normals, [K, N]),
      bias: tf.randomNormal([N], 0, 1, 'float32', N) as tf.Tensor1D,
    };
  };

  // Read-ahead (the source's section 5) only reads the panels before the tiles run, and the
  // one-row tiles only change how many panels a row takes at once: every plan must give the
  // same bits. N spans several read-ahead groups and ends in a short one (64 KB: 32 panels of
  // K 64 in f32, 3 of K 576), so every group boundary is crossed.
  it.each(
    [1, 2, 3, 4, 5, 6, 7, 8, 9].flatMap((M) =>
      [
        [64, 8 * 70],
        [576, 8 * 7],
      ].map(([K, N]) => [M, K, N, M % 2 === 1] as const),
    ),
  )('gives the same result, to the bit, under every matmul plan, for M %i, K %i, N %i, bf16 %s', (M, K, N, bf16) => {
    tf.tidy(() => {
        const { x, w, bias } = operands(M, K, N, bf16);
        const packed = packWeights(w) as PackedWeights;
        expect(packed.bf16).toBe(bf16);
        const product = (plan: matmul.MatMulPlan) => Array.from((packedMatMul(x, packed, bias, plan) as tf.Tensor2D).dataSync());
        const streamed = product({ oneRowTile: 'narrow', oneRowReadAhead: false, rowsReadAhead: false });
        for (const oneRowTile of ['narrow', 'wide'] as const) {
          for (const ahead of [false, true]) expect(product({ oneRowTile, oneRowReadAhead: ahead, rowsReadAhead: ahead })).toEqual(streamed);
        }
        expect(maxAbsDiff(Float32Array.from(streamed), tf.add(tf.matMul(x, w), bias).dataSync())).toBeLessThan(2e-6 * K + 1e-5);
        packed.dispose();
    });
  });

  // Panels in pairs (the source's section 9) change only where the weights sit and which
  // tiles read them (1 x 16 and 2 x 16 over a pair): every output is still summed k by k from
  // the bias, so they give the unpaired panels' bits for every row count, with and without
  // read-ahead. N: 70 panels (35 pairs), across several read-ahead groups at K 64; 8 panels at
  // K 576. A weight whose panels cannot pair (N not a multiple of 16) is packed unpaired.
  it.each(
    [1, 2, 3, 4, 5, 8, 9].flatMap((M) =>
      [
        [64, 8 * 70],
        [576, 8 * 8],
      ].flatMap(([K, N]) => [false, true].map((bf16) => [M, K, N, bf16] as const)),
    ),
  )('gives the bits of unpaired panels with panels in pairs, for M %i, K %i, N %i, bf16 %s', (M, K, N, bf16) => {
    tf.tidy(() => {
      const { x, w, bias } = operands(M, K, N, bf16);
      const [single, pairs] = [packWeights(w), packWeights(w, 'auto', { paired: true })] as PackedWeights[];
      expect([single.paired, pairs.paired, pairs.bf16]).toEqual([false, true, bf16]);
      const unpaired = Array.from((packedMatMul(x, single, bias) as tf.Tensor2D).dataSync());
      for (const ahead of [false, true]) {
        const plan = { oneRowTile: 'paired', oneRowReadAhead: ahead, rowsReadAhead: ahead } as const;
        expect(Array.from((packedMatMul(x, pairs, bias, plan) as tf.Tensor2D).dataSync())).toEqual(unpaired);
      }
      const odd = packWeights(tf.slice(w, [0, 0], [K, N - 8])) as PackedWeights;
      const oddPairs = packWeights(tf.slice(w, [0, 0], [K, N - 8]), 'auto', { paired: true }) as PackedWeights;
      expect(oddPairs.paired).toBe(false);
      expect(Array.from((packedMatMul(x, oddPairs, null) as tf.Tensor2D).dataSync())).toEqual(Array.from((packedMatMul(x, odd, null) as tf.Tensor2D).dataSync()));
      [single, pairs, odd, oddPairs].forEach((packed) => packed.dispose());
    });
  });

  // relay re-lays packed panels in place: into pairs they are the floats packWeights lays in
  // pairs, and back the floats it lays one panel after another; a weight that cannot pair
  // (q8, or N not a multiple of 16) refuses.
  it.each([false, true])('re-lays panels into pairs and back in place, bf16 %s', (bf16) => {
    tf.tidy(() => {
      const { w } = operands(1, 64, 8 * 6, bf16);
      const [single, pairs] = [packWeights(w), packWeights(w, 'auto', { paired: true })] as PackedWeights[];
      const floats = (packed: PackedWeights) => Array.from((packed.panels as tf.Tensor3D).dataSync());
      const apart = floats(single);
      expect(floats(pairs)).not.toEqual(apart);
      single.relay(true);
      expect(single.paired).toBe(true);
      expect(floats(single)).toEqual(floats(pairs));
      single.relay(false);
      expect(single.paired).toBe(false);
      expect(floats(single)).toEqual(apart);
      const odd = packWeights(tf.slice(w, [0, 0], [64, 8 * 5])) as PackedWeights;
      const q8 = packWeights(w, 'q8') as PackedWeights;
      expect([odd.pairable, q8.pairable, single.pairable]).toEqual([false, false, true]);
      expect(() => odd.relay(true)).toThrow('cannot be paired');
      expect(() => q8.relay(true)).toThrow('cannot be paired');
      [single, pairs, odd, q8].forEach((packed) => packed.dispose());
    });
  });

  // x (1 + 2^-23) times w (1 + 2^-7, exactly bf16) is 1 + 2^-7 + 2^-23 + 2^-30, which f32 cannot
  // hold; the bias takes back all but 2^-30. A multiply then an add rounds the product first and
  // gives 0; a fused multiply-add rounds once and gives 2^-30 (every x86-64 CPU with FMA3).
  it.each([
    [1, 'f32', 'narrow'],
    [1, 'f32', 'wide'],
    [4, 'f32', 'wide'],
    [1, 'bf16', 'narrow'],
    [1, 'bf16', 'wide'],
    [4, 'bf16', 'wide'],
  ] as const)('multiplies and adds fused, for %i rows of %s panels (%s one-row tile), on one thread and on two', async (M, format, oneRowTile) => {
    const x = 1 + 2 ** -23;
    const w = 1 + 2 ** -7;
    for (const threads of [1, 2]) {
      matmul.startMatMulThreads(threads);
      try {
        tf.tidy(() => {
          // 32 columns: four panels, so that the wide tile takes them at once.
          const packed = packWeights(tf.fill([1, 32], w) as tf.Tensor2D, format === 'f32' ? 'f32' : 'auto') as PackedWeights;
          expect(packed.format).toBe(format);
          const bias = tf.fill([32], -Math.fround(x * w)) as tf.Tensor1D;
          const plan = { ...matmul.DEFAULT_MATMUL_PLAN, oneRowTile };
          const product = Array.from((packedMatMul(tf.fill([M, 1], x) as tf.Tensor2D, packed, bias, plan) as tf.Tensor2D).dataSync());
          expect(product).toEqual(new Array(32 * M).fill(2 ** -30));
          packed.dispose();
        });
      } finally {
        await matmul.stopMatMulThreads();
      }
    }
  });

  it('tunes a plan on weights too large for any cache only, keeping what is fixed, and reuses it for weights of the same shapes and format', () => {
    const panels = (K: number, N: number) => {
      const w = tf.ones([K, N]) as tf.Tensor2D;
      const packed = packWeights(w, 'f32') as PackedWeights;
      w.dispose();
      return packed;
    };
    const small = panels(576, 576);
    const large = panels(2048, 8192); // 64 MB: the least that is timed
    const again = panels(2048, 8192);
    const wider = panels(2048, 8200);
    wider.dispose();
    try {
      // Too small to time: the default, with what is fixed.
      expect(matmul.tuneMatMul([small])).toEqual(matmul.DEFAULT_MATMUL_PLAN);
      expect(matmul.tuneMatMul([small], { oneRowTile: 'narrow' })).toEqual({ ...matmul.DEFAULT_MATMUL_PLAN, oneRowTile: 'narrow' });
      const fixed = { oneRowTile: 'narrow', rowsReadAhead: true } as const;
      // store: null keeps plans to this process, so that this test times what it says it times.
      const choice = matmul.tuneMatMul([small, large], fixed, { store: null });
      expect(choice).toEqual({ ...fixed, oneRowReadAhead: expect.any(Boolean) });
      // The same shapes and format again (another model's weights): the same plan, without
      // multiplying anything (these panels are already disposed: a product would throw).
      again.dispose();
      expect(matmul.tuneMatMul([small, again], fixed, { store: null })).toEqual(choice);
      // Other settings fixed: a plan of their own (all fixed: nothing to time).
      expect(matmul.tuneMatMul([small, again], { oneRowTile: 'wide', oneRowReadAhead: true, rowsReadAhead: false })).toEqual({ oneRowTile: 'wide', oneRowReadAhead: true, rowsReadAhead: false });
      // Other shapes are timed on their own (and these panels are disposed).
      expect(() => matmul.tuneMatMul([small, wider], fixed, { store: null })).toThrow();
    } finally {
      small.dispose();
      large.dispose();
    }
  });

  // Another process on this machine timed these shapes before: its plan is taken as it is,
  // untimed (the panels are disposed: a product would throw), and a plan timed here is kept.
  it('takes the plan a store on this machine keeps for the weights, and keeps the plans it times', () => {
    const stored: matmul.MatMulPlan = { oneRowTile: 'wide', oneRowReadAhead: true, rowsReadAhead: false };
    const kept = new Map<string, matmul.MatMulPlan>();
    const store = { get: () => stored, set: (key: string, plan: matmul.MatMulPlan) => kept.set(key, plan) } as unknown as MatMulPlanStore;
    const w = tf.ones([2048, 8216]) as tf.Tensor2D;
    const disposed = packWeights(w, 'f32') as PackedWeights;
    w.dispose();
    disposed.dispose();
    expect(matmul.tuneMatMul([disposed], {}, { store })).toEqual(stored);
    const empty = { get: () => undefined, set: (key: string, plan: matmul.MatMulPlan) => kept.set(key, plan) } as unknown as MatMulPlanStore;
    const w2 = tf.ones([2048, 8224]) as tf.Tensor2D;
    const timed = packWeights(w2, 'f32') as PackedWeights;
    w2.dispose();
    try {
      const plan = matmul.tuneMatMul([timed], { oneRowTile: 'narrow' }, { store: empty });
      expect([...kept.values()]).toEqual([plan]);
    } finally {
      timed.dispose();
    }
  });

  // With mayPair, timing chooses the layout too: the plan's one-row tile is 'paired' exactly
  // when every pairable weight was left in pairs (the rest as they were), products keep their
  // bits, and weights of the same shapes tuned again are laid out as the plan says, untimed.
  // With the one-row tile fixed, nothing is paired.
  it('re-lays the pairable weights in pairs, or leaves them, as the plan timed with mayPair says', () => {
    const panels = (K: number, N: number) => {
      const w = tf.ones([K, N]) as tf.Tensor2D;
      const packed = packWeights(w) as PackedWeights;
      w.dispose();
      return packed;
    };
    const large = panels(2048, 16384); // bf16 (ones are exactly bf16): 64 MB
    const odd = panels(576, 8 * 9);
    const again = panels(2048, 16384);
    const fixedTile = panels(2048, 16384);
    const x = tf.randomNormal([2, 2048], 0, 1, 'float32', 2) as tf.Tensor2D;
    const product = (w: PackedWeights, plan: matmul.MatMulPlan) => tf.tidy(() => Array.from((packedMatMul(x, w, null, plan) as tf.Tensor2D).dataSync()));
    try {
      expect([large.bf16, large.pairable, odd.pairable]).toEqual([true, true, false]);
      const before = product(large, matmul.DEFAULT_MATMUL_PLAN);
      const fixed = { oneRowReadAhead: false, rowsReadAhead: false };
      const plan = matmul.tuneMatMul([large, odd], fixed, { mayPair: true });
      const paired = plan.oneRowTile === 'paired';
      expect([large.paired, odd.paired]).toEqual([paired, false]);
      expect(product(large, plan)).toEqual(before);
      expect(matmul.tuneMatMul([again, odd], fixed, { mayPair: true })).toEqual(plan);
      expect(again.paired).toBe(paired);
      const narrow = matmul.tuneMatMul([fixedTile], { ...fixed, oneRowTile: 'narrow' }, { mayPair: true });
      expect([narrow.oneRowTile, fixedTile.paired]).toEqual(['narrow', false]);
    } finally {
      [large, odd, again, fixedTile].forEach((w) => w.dispose());
      x.dispose();
    }
  });

  it.each([
    ['on', 'narrow'],
    ['off', 'wide'],
  ] as const)('gives a model loaded for inference with read-ahead %s and the %s one-row tile that plan, for its own projections', async (readAhead, oneRowTile) => {
    const lm = await loadModel(makeTiny('matmul-plan'), { inferenceOnly: true, readAhead, oneRowTile });
    try {
      const plan = { oneRowTile, oneRowReadAhead: readAhead === 'on', rowsReadAhead: readAhead === 'on' };
      expect(lm.model.matmulPlan).toEqual(plan);
      for (const { linear } of lm.model.linears()) expect(linear.matmulPlan).toEqual(plan);
      expect(lm.model.lmHead.matmulPlan).toEqual(plan);
    } finally {
      lm.dispose();
    }
  });

  it('keeps each loaded model\'s plan its own: loading a second model with other settings leaves the first one\'s', async () => {
    const dir = makeTiny('matmul-plan');
    const first = await loadModel(dir, { inferenceOnly: true, readAhead: 'on', oneRowTile: 'narrow' });
    const second = await loadModel(dir, { inferenceOnly: true, readAhead: 'off', oneRowTile: 'wide' });
    try {
      expect(first.model.matmulPlan).toEqual({ oneRowTile: 'narrow', oneRowReadAhead: true, rowsReadAhead: true });
      expect(second.model.matmulPlan).toEqual({ oneRowTile: 'wide', oneRowReadAhead: false, rowsReadAhead: false });
      for (const { linear } of first.model.linears()) expect(linear.matmulPlan).toEqual(first.model.matmulPlan);
      for (const { linear } of second.model.linears()) expect(linear.matmulPlan).toEqual(second.model.matmulPlan);
      // The same tokens decode to the same logits under either plan (the plans change speed only).
      const a = first.model.forward([[1, 2, 3]]);
      const b = second.model.forward([[1, 2, 3]]);
      expect(Array.from(a.dataSync())).toEqual(Array.from(b.dataSync()));
      tf.dispose([a, b]);
    } finally {
      first.dispose();
      second.dispose();
    }
  });

  it('packs a model loaded with the paired one-row tile in pairs, which decodes to the bits of unpaired weights', async () => {
    const dir = makeTiny('matmul-plan');
    const single = await loadModel(dir, { inferenceOnly: true, readAhead: 'off', oneRowTile: 'narrow' });
    const pairs = await loadModel(dir, { inferenceOnly: true, readAhead: 'off', oneRowTile: 'paired' });
    try {
      expect(pairs.model.matmulPlan).toEqual({ oneRowTile: 'paired', oneRowReadAhead: false, rowsReadAhead: false });
      const packed = pairs.model.packedWeights();
      expect(packed.length).toBeGreaterThan(0);
      for (const w of packed) expect(w.paired).toBe(w.outFeatures % 16 === 0);
      expect(packed.some((w) => w.paired)).toBe(true);
      expect(single.model.packedWeights().some((w) => w.paired)).toBe(false);
      for (const tokens of [[[1, 2, 3]], [[4]], [[5, 6], [7, 8]]]) {
        const [a, b] = [single.model.forward(tokens), pairs.model.forward(tokens)];
        expect(Array.from(b.dataSync())).toEqual(Array.from(a.dataSync()));
        tf.dispose([a, b]);
      }
      expect(await decodeLogits(pairs.model)).toEqual(await decodeLogits(single.model));
    } finally {
      single.dispose();
      pairs.dispose();
    }
  });

  // A bf16 model of 71 MB (35.7 M weights), large enough to be timed at load: with the
  // one-row tile 'auto' the timing chooses the layout too, every pairable weight is in the
  // layout the plan names, and decoding gives the bits of the same model held apart.
  it('lets timing at load choose the layout of a model large enough to stream, with the bits of panels apart', async () => {
    const shape = { hiddenSize: 512, intermediateSize: 2048, numLayers: 8, vocabSize: 8192, numHeads: 8, numKvHeads: 4, headDim: 64 };
    const dir = makeTiny('matmul-layout', { dtype: 'BF16', overrides: shape });
    const timed = await loadModel(dir, { inferenceOnly: true });
    const apart = await loadModel(dir, { inferenceOnly: true, oneRowTile: 'narrow' });
    try {
      const packed = timed.model.packedWeights();
      expect(packed.reduce((bytes, w) => bytes + w.bytes, 0)).toBeGreaterThan(64 << 20);
      const inPairs = timed.model.matmulPlan.oneRowTile === 'paired';
      for (const w of packed) expect([w.bf16, w.paired]).toEqual([true, inPairs && w.pairable]);
      expect(apart.model.packedWeights().some((w) => w.paired)).toBe(false);
      expect(await decodeLogits(timed.model)).toEqual(await decodeLogits(apart.model));
    } finally {
      timed.dispose();
      apart.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('describes a plan in words for the logs', () => {
    expect(matmul.describeMatMulPlan({ oneRowTile: 'narrow', oneRowReadAhead: false, rowsReadAhead: true })).toBe(
      'one sequence: narrow tile, read-ahead off; batches: read-ahead on',
    );
  });

  it('frees the scratch copy of x that tiles of 2-4 rows read (section 7): nothing is left on the backend', () => {
    const backend = tf.backend() as unknown as { numDataIds(): number };
    tf.tidy(() => {
      const packed = packWeights(tf.randomNormal([64, 16], 0, 1, 'float32', 1) as tf.Tensor2D) as PackedWeights;
      const x = tf.randomNormal([7, 64], 0, 1, 'float32', 2) as tf.Tensor2D;
      const before = backend.numDataIds();
      for (let i = 0; i < 3; i++) (packedMatMul(x, packed) as tf.Tensor2D).dispose();
      expect(backend.numDataIds()).toBe(before);
      packed.dispose();
    });
  });

  it('declines what it does not cover: N not a multiple of 8, gradients, other dtypes', () => {
    tf.tidy(() => {
      expect(packWeights(tf.zeros([4, 12]) as tf.Tensor2D)).toBeNull();
      expect(packWeights(tf.zeros([4, 16], 'int32') as tf.Tensor2D)).toBeNull();
      const packed = packWeights(tf.ones([4, 16]) as tf.Tensor2D);
      if (!packed) throw new Error('packWeights declined');
      expect(packedMatMul(tf.ones([2, 4], 'int32') as tf.Tensor2D, packed)).toBeNull();
      ensureTrainingGradients();
      const dx = tf.grad((x: tf.Tensor) => {
        expect(packedMatMul(x as tf.Tensor2D, packed)).toBeNull();
        return tf.sum(x);
      })(tf.ones([2, 4]));
      expect(dx.shape).toEqual([2, 4]);
      expect(() => packedMatMul(tf.ones([2, 5]) as tf.Tensor2D, packed)).toThrow(/do not fit/);
      expect(() => packedMatMul(tf.ones([2, 4]) as tf.Tensor2D, packed, tf.zeros([8]) as tf.Tensor1D)).toThrow(/do not fit/);
      packed.dispose();
    });
  });

  it('falls back to tfjs on the cpu backend', async () => {
    await useBackend('cpu');
    try {
      expect(matMulKernelAvailable()).toBe(false);
      const w = tf.ones([4, 16]) as tf.Tensor2D;
      expect(packWeights(w)).toBeNull();
      w.dispose();
    } finally {
      await useBackend('wasm');
    }
  });

  it.each([
    ['llama', { modelType: 'llama' as const }],
    ['qwen2 (q/k/v biases), tied embeddings', { modelType: 'qwen2' as const, tieWordEmbeddings: true }],
  ])('gives a %s model the logits it has with tf.matMul', async (_, overrides) => {
    const lm = await loadModel(makeTiny('matmul', { overrides, initStd: 0.2 }));
    const used = jest.spyOn(matmul, 'packedMatMul');
    try {
      // 3 rows of 4 tokens: 12 rows per projection.
      const tokens = [
        [1, 17, 300, 42],
        [1, 99, 2, 7],
        [1, 401, 5, 260],
      ];
      const withKernel = lm.model.forward(tokens);
      expect(used.mock.results.some((r) => r.value !== null)).toBe(true);
      // With the training gradient enabled, every projection runs tf.matMul / tf.fused.matMul.
      const linears = [...lm.model.linears().map((l) => l.linear), lm.model.lmHead];
      linears.forEach((l) => l.enableBackward());
      const withoutKernel = lm.model.forward(tokens);
      linears.forEach((l) => l.disableBackward());
      expect(maxAbsDiff(withKernel.dataSync(), withoutKernel.dataSync())).toBeLessThan(1e-4);
      tf.dispose([withKernel, withoutKernel]);
    } finally {
      used.mockRestore();
      lm.dispose();
    }
  });

  it.each([
    ['f32', 'F32' as const, 1],
    ['bf16', 'BF16' as const, 0.5],
  ])('loads %s weights for inference only: each projection packed once and its [in, out] copy freed, same logits', async (_, dtype, packedSize) => {
    const dir = makeTiny(`matmul-inference-only-${dtype}`, { initStd: 0.2, dtype });
    const tokens = [
      [1, 17, 300, 42],
      [1, 99, 2, 7],
    ];
    const full = await loadModel(dir);
    const fullBytes = tf.memory().numBytes;
    const expected = full.model.forward(tokens);
    const reference = expected.dataSync().slice();
    expected.dispose();
    const projections = [...full.model.linears().map((l) => l.linear), full.model.lmHead];
    const weightBytes = projections.reduce((s, l) => s + l.weightT.size * 4, 0);
    full.dispose();

    const before = tf.memory().numBytes;
    const lean = await loadModel(dir, { inferenceOnly: true });
    const linears = [...lean.model.linears().map((l) => l.linear), lean.model.lmHead];
    expect(linears.every((l) => l.released)).toBe(true);
    // Loaded, the full model holds the [in, out] weights only (packing waits for first use);
    // the lean one holds the packed copies instead: as large for f32 weights, half for bf16.
    expect(tf.memory().numBytes - before).toBe(fullBytes - before - weightBytes * (1 - packedSize));
    const logits = lean.model.forward(tokens);
    expect(Array.from(logits.dataSync())).toEqual(Array.from(reference));
    logits.dispose();
    // After a forward pass, a full model holds both copies; the lean one still holds one.
    expect(tf.memory().numBytes - before).toBeLessThan(fullBytes - before + weightBytes / 2);
    expect(() => linears[0].enableBackward()).toThrow(/q_proj\|k_proj\|v_proj: its weight was released for inference/);
    expect(() => linears[0].weightT).toThrow(/released for inference/);
    lean.dispose();
    expect(tf.memory().numBytes).toBe(before);
  });

  it('packs each projection once, on first use, and frees the copies with the model', async () => {
    const baseline = tf.memory().numTensors;
    const lm = await loadModel(makeTiny('matmul-free'));
    const loaded = tf.memory().numTensors;
    lm.model.forward([[1, 2, 3]]).dispose();
    const packed = tf.memory().numTensors - loaded;
    expect(packed).toBe(lm.model.linears().length + 1); // and the lm_head
    lm.model.forward([[4, 5]]).dispose();
    expect(tf.memory().numTensors - loaded).toBe(packed);
    lm.dispose();
    expect(tf.memory().numTensors).toBe(baseline);
  });
});
