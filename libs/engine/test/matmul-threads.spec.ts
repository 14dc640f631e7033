import * as tf from '@tensorflow/tfjs-core';
import { bf16ToF32, f32ToBf16 } from '../src/dtype';
import * as matmul from '../src/kernels/matmul';
import { PackedWeights, packWeights, packedMatMul, startMatMulThreads, stopMatMulThreads } from '../src/kernels/matmul';
import { Arena, MatMulThreads, sharedMemory } from '../src/kernels/matmul-threads';
import { promptAttention, promptAttentionWithGradient } from '../src/kernels/prompt-attention';
import { MASKED } from '../src/model/kv-cache';
import { ensureTrainingGradients } from '../src/training/gradients';
import { packedMatMulTransposed, packedMatMulTransposedAlongside } from '../src/kernels/matmul-transposed';
import { addLoraDeltas, DIVIDED_BACKWARD_THREADS, LoraPart, loraGradients, loraGradientsOnThreads, projectWithLora } from '../src/kernels/lora';
import { loadModel } from '../src/loader';
import { generateBatch } from '../src/generate';
import { DEFAULT_LORA_SPEC } from '../src/lora/peft';
import { LoraTrainer } from '../src/training/trainer';
import { makeTiny, maxAbsDiff, rowsOf, useBackend } from './helpers';
import { referenceForward } from './reference';

describe('matmul threads: one copy of the weights, every product divided between threads', () => {
  beforeAll(() => useBackend('wasm'));
  afterEach(() => stopMatMulThreads());

  const weights = (K: number, N: number, bf16: boolean, seed: number) => {
    const normals = tf.randomNormal([K, N], 0, 1, 'float32', seed).dataSync() as Float32Array;
    return tf.tensor2d(bf16 ? bf16ToF32(f32ToBf16(normals)) : normals, [K, N]);
  };

  // Rows: one, every remainder of the 4-row tile, a prefill. N: panels that two and three
  // threads cannot divide evenly. Small products (M 1, K 64) run on one thread: covered too.
  const cases = [1, 2, 3, 4, 5, 7, 8, 9, 33].flatMap((M) =>
    [
      [64, 8 * 13],
      [576, 8 * 61],
    ].map(([K, N], i) => [M, K, N, (M + i) % 2 === 0] as const),
  );
  it.each(cases)('gives the bits of one thread, for M %i, K %i, N %i, bf16 %s, on 2 and 3 threads, under every plan, with and without a bias', async (M, K, N, bf16) => {
    const x = tf.randomNormal([M, K], 0, 1, 'float32', M) as tf.Tensor2D;
    const bias = tf.randomNormal([N], 0, 1, 'float32', N) as tf.Tensor1D;
    const w = weights(K, N, bf16, K);
    const alone = packWeights(w) as PackedWeights;
    expect(alone.threaded).toBeNull();
    try {
      for (const count of [2, 3]) {
        startMatMulThreads(count);
        const shared = packWeights(w) as PackedWeights;
        expect(shared.threaded).not.toBeNull();
        expect(shared.panels).toBeNull();
        expect(shared.bf16).toBe(bf16);
        for (const oneRowTile of ['narrow', 'wide'] as const) {
          for (const ahead of [false, true]) {
            const plan = { oneRowTile, oneRowReadAhead: ahead, rowsReadAhead: ahead };
            for (const b of [bias, null]) {
              const one = packedMatMul(x, alone, b, plan) as tf.Tensor2D;
              const many = packedMatMul(x, shared, b, plan) as tf.Tensor2D;
              expect(many.shape).toEqual([M, N]);
              expect(Array.from(many.dataSync())).toEqual(Array.from(one.dataSync()));
              one.dispose();
              many.dispose();
            }
          }
        }
        shared.dispose();
        await stopMatMulThreads();
      }
    } finally {
      tf.dispose([x, bias, w]);
      alone.dispose();
    }
  });

  // Panels in pairs (the kernel source's section 9) are divided in whole pairs: 62 panels, 31
  // pairs, which neither 2 nor 3 threads divide evenly, nor in fours. Panels packed one after
  // another and re-laid into pairs in the threads' memory, and back, give the same bits.
  it.each([1, 2, 3, 5, 33].flatMap((M) => [false, true].map((bf16) => [M, bf16] as const)))(
    'gives the bits of unpaired panels on one thread with panels in pairs on 2 and 3 threads, packed so or re-laid, for M %i, bf16 %s',
    async (M, bf16) => {
      const [K, N] = [576, 8 * 62];
      const x = tf.randomNormal([M, K], 0, 1, 'float32', M) as tf.Tensor2D;
      const bias = tf.randomNormal([N], 0, 1, 'float32', N) as tf.Tensor1D;
      const w = weights(K, N, bf16, K);
      const alone = packWeights(w) as PackedWeights;
      const one = packedMatMul(x, alone, bias) as tf.Tensor2D;
      try {
        for (const count of [2, 3]) {
          startMatMulThreads(count);
          const shared = packWeights(w, 'auto', { paired: true }) as PackedWeights;
          expect([shared.paired, shared.threaded !== null]).toEqual([true, true]);
          const many = packedMatMul(x, shared, bias, { oneRowTile: 'paired', oneRowReadAhead: false, rowsReadAhead: false }) as tf.Tensor2D;
          expect(Array.from(many.dataSync())).toEqual(Array.from(one.dataSync()));
          const relaid = packWeights(w) as PackedWeights;
          for (const paired of [true, false]) {
            relaid.relay(paired);
            const plan = { oneRowTile: paired ? 'paired' : 'narrow', oneRowReadAhead: false, rowsReadAhead: false } as const;
            const product = packedMatMul(x, relaid, bias, plan) as tf.Tensor2D;
            expect([relaid.paired, Array.from(product.dataSync())]).toEqual([paired, Array.from(one.dataSync())]);
            product.dispose();
          }
          tf.dispose(many);
          [shared, relaid].forEach((packed) => packed.dispose());
          await stopMatMulThreads();
        }
      } finally {
        tf.dispose([x, bias, w, one]);
        alone.dispose();
      }
    },
  );

  // Rows: one, around the 8-row tile and the 64-row block. K: 4-row tiles that 2 and 3 threads
  // cannot divide evenly (145), and few (9: the product is too small to divide, and runs on
  // the calling thread). N: around the 32-panel block.
  const transposedCases = [1, 7, 8, 9, 63, 65].flatMap((M) =>
    [
      [580, 8 * 37],
      [36, 8 * 13],
      [576, 8 * 32],
    ].map(([K, N]) => [M, K, N] as const),
  );
  it.each(transposedCases)('runs the input gradient dy W^T on the threads with the bits of one thread, for M %i, K %i, N %i, on 2 and 3 threads', async (M, K, N) => {
    const dy = tf.randomNormal([M, N], 0, 1, 'float32', M + N) as tf.Tensor2D;
    const w = weights(K, N, false, K);
    const alone = packWeights(w, 'f32') as PackedWeights;
    const one = packedMatMulTransposed(dy, alone) as tf.Tensor2D;
    expect(one).not.toBeNull();
    try {
      for (const count of [2, 3]) {
        startMatMulThreads(count);
        const shared = packWeights(w, 'f32') as PackedWeights;
        expect(shared.threaded).not.toBeNull();
        const profile = await tf.profile(() => packedMatMulTransposed(dy, shared) as tf.Tensor2D);
        const many = profile.result as tf.Tensor2D;
        expect(profile.kernels.map((k) => k.name)).toEqual(['TrainyardThreadedMatMulTransposed']);
        expect(many.shape).toEqual([M, K]);
        expect(Array.from(many.dataSync())).toEqual(Array.from(one.dataSync()));
        // Begun on the helpers, finished after other work on this thread: the same bits.
        const along = packedMatMulTransposedAlongside(dy, shared, () => tf.sum(dy).dataSync()[0]);
        expect(along?.result).toBeCloseTo(tf.sum(dy).dataSync()[0], 3);
        expect(Array.from((along?.dx as tf.Tensor2D).dataSync())).toEqual(Array.from(one.dataSync()));
        tf.dispose([many, along?.dx as tf.Tensor2D]);
        shared.dispose();
        await stopMatMulThreads();
      }
    } finally {
      tf.dispose([dy, w, one]);
      alone.dispose();
    }
  });

  // M, K, the parts' widths (summing to N) and ranks: a q|k|v projection with one part left
  // without an adapter, rows that 2 and 3 threads divide unevenly, an odd row, K and widths
  // that leave partial units of 16, an MLP's down projection (K 1536); products large enough
  // to be divided, and one too small.
  const loraCases = [
    [67, 64, [64, 32, 32], [8, 0, 4]],
    [301, 36, [20, 44], [4, 8]],
    [130, 96, [256], [8]],
    [33, 1536, [576], [16]],
    [3, 64, [64], [8]],
  ] as const;
  it.each(loraCases)('runs an adapted projection on 2, 3 and 4 threads, forward and (from DIVIDED_BACKWARD_THREADS) backward, with the bits of one thread, for M %i, K %i, widths %j, ranks %j', async (M, K, widths, ranks) => {
    const N = widths.reduce((a, b) => a + b, 0);
    const x = tf.randomNormal([M, K], 0, 1, 'float32', M) as tf.Tensor2D;
    const dy = tf.randomNormal([M, N], 0, 1, 'float32', M + 1) as tf.Tensor2D;
    const bias = tf.randomNormal([N], 0, 1, 'float32', N) as tf.Tensor1D;
    const w = weights(K, N, false, K);
    let col = 0;
    const parts: LoraPart[] = widths.flatMap((width, i) => {
      const at = col;
      col += width;
      if (ranks[i] === 0) return [];
      const aT = tf.randomNormal([K, ranks[i]], 0, 0.3, 'float32', 10 + i) as tf.Tensor2D;
      const bT = tf.randomNormal([ranks[i], width], 0, 0.3, 'float32', 20 + i) as tf.Tensor2D;
      return [{ aT, bT, scale: i === 0 ? tf.scalar(2 / ranks[i]) : null, col: at, width }];
    });
    const alone = packWeights(w, 'f32') as PackedWeights;
    const plan = matmul.DEFAULT_MATMUL_PLAN;
    const oneForward = addLoraDeltas(packedMatMul(x, alone, bias, plan) as tf.Tensor2D, x, parts);
    const oneGrads = loraGradients(x, dy, parts);
    const oneDx = tf.add(packedMatMulTransposed(dy, alone) as tf.Tensor2D, oneGrads.dx);
    // On weights in tfjs's heap: one kernel call, the same bits; the backward is the threads' only.
    const heapForward = projectWithLora(x, alone, bias, plan, parts) as tf.Tensor2D;
    expect(Array.from(heapForward.dataSync())).toEqual(Array.from(oneForward.dataSync()));
    heapForward.dispose();
    expect(loraGradientsOnThreads(x, dy, alone, parts)).toBeNull();
    try {
      for (const count of [2, 3, 4]) {
        startMatMulThreads(count);
        const shared = packWeights(w, 'f32') as PackedWeights;
        const forward = projectWithLora(x, shared, bias, plan, parts) as tf.Tensor2D;
        expect(Array.from(forward.dataSync())).toEqual(Array.from(oneForward.dataSync()));
        if (count < DIVIDED_BACKWARD_THREADS) {
          expect(loraGradientsOnThreads(x, dy, shared, parts)).toBeNull();
          tf.dispose(forward);
          shared.dispose();
          await stopMatMulThreads();
          continue;
        }
        const backward = loraGradientsOnThreads(x, dy, shared, parts) as { dx: tf.Tensor2D; grads: tf.Tensor2D[] };
        expect(backward.dx.shape).toEqual([M, K]);
        expect(Array.from(backward.dx.dataSync())).toEqual(Array.from(oneDx.dataSync()));
        expect(backward.grads.map((g) => g.shape)).toEqual(oneGrads.grads.map((g) => g.shape));
        backward.grads.forEach((g, i) => expect(Array.from(g.dataSync())).toEqual(Array.from(oneGrads.grads[i].dataSync())));
        // Parts routed to some rows are a server's, not these kernels'.
        expect(projectWithLora(x, shared, bias, plan, parts.map((p) => ({ ...p, rows: [0] })))).toBeNull();
        tf.dispose([forward, backward.dx, ...backward.grads]);
        shared.dispose();
        await stopMatMulThreads();
      }
    } finally {
      tf.dispose([x, dy, bias, w, oneForward, oneDx, oneGrads.dx, ...oneGrads.grads, ...parts.flatMap((p) => [p.aT, p.bT, ...(p.scale ? [p.scale] : [])])]);
      alone.dispose();
    }
  });

  // B, KV, G, T, S, stride, D, divided: SmolLM2-135M's grouping over a prompt (T G a multiple
  // of 4, then not); two sequences after cached columns, each with its own mask row and left
  // padding, in a cache with spare columns (stride > S); a prompt too short to be worth
  // dividing, which stays on one thread. Each runs 4 times on the threads: helpers still
  // starting, then spinning for work.
  it.each([
    [1, 3, 3, 256, 256, 256, 64, true],
    [1, 3, 3, 261, 261, 261, 64, true],
    [2, 2, 2, 301, 320, 336, 48, true],
    [1, 3, 3, 45, 45, 45, 64, false],
  ])('divides a prompt\'s attention between 2 and 3 threads with the bits of one thread, for B %i, KV %i, G %i, T %i, S %i, stride %i, D %i (divided: %s)', async (B, KV, G, T, S, stride, D, divides) => {
    const q = tf.randomNormal([B * T, KV * G * D], 0, 2, 'float32', 1) as tf.Tensor2D;
    const k = tf.randomNormal([B, KV, stride, D], 0, 1, 'float32', 2) as tf.Tensor4D;
    const v = tf.randomNormal([B, KV, stride, D], 0, 1, 'float32', 3) as tf.Tensor4D;
    // Row b hides its first b cached columns (left padding); the T new ones are causal.
    const maskData = new Float32Array(B * T * S).fill(MASKED);
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < T; t++) maskData.fill(0, (b * T + t) * S + b, (b * T + t) * S + S - T + t + 1);
    }
    const mask = tf.tensor4d(maskData, [B, 1, T, S]);
    const one = promptAttention(q, k, v, mask, T) as tf.Tensor2D;
    const divided = jest.spyOn(MatMulThreads.prototype, 'runPromptAttention');
    try {
      for (const count of [2, 3]) {
        startMatMulThreads(count);
        for (let run = 0; run < 4; run++) {
          const out = promptAttention(q, k, v, mask, T) as tf.Tensor2D;
          const [many, expected] = [out.dataSync(), one.dataSync()];
          out.dispose();
          // Counted rather than compared whole: a diff of 147,456 floats takes minutes to print.
          expect(many.filter((x, i) => !Object.is(x, expected[i])).length).toBe(0);
        }
        await stopMatMulThreads();
      }
      expect(divided).toHaveBeenCalledTimes(divides ? 8 : 0);
    } finally {
      divided.mockRestore();
      tf.dispose([q, k, v, mask, one]);
    }
  });

  // B, KV, G, T, D: SmolLM2-135M's grouping over 256 tokens (3 KV heads: one thread takes two);
  // two sequences, 4 heads, T G not a multiple of 4. Twice on each count of threads.
  it.each([
    [1, 3, 3, 256, 64],
    [2, 2, 2, 301, 48],
  ])('divides a prompt attention\'s gradient between 2 and 3 threads with the bits of one thread, for B %i, KV %i, G %i, T %i, D %i', async (B, KV, G, T, D) => {
    const q = tf.randomNormal([B * T, KV * G * D], 0, 2, 'float32', 1) as tf.Tensor2D;
    const k = tf.randomNormal([B, KV, T, D], 0, 1, 'float32', 2) as tf.Tensor4D;
    const v = tf.randomNormal([B, KV, T, D], 0, 1, 'float32', 3) as tf.Tensor4D;
    const outputWeights = tf.randomNormal([B * T, KV * G * D], 0, 1, 'float32', 4);
    const causal = new Float32Array(T * T).fill(MASKED);
    for (let t = 0; t < T; t++) causal.fill(0, t * T, t * T + t + 1);
    const mask = tf.tensor4d(causal, [1, 1, T, T]);
    ensureTrainingGradients();
    const gradients = () => {
      const grads = tf.grads((qi, ki, vi) => tf.sum(tf.mul(promptAttentionWithGradient(qi as tf.Tensor2D, ki as tf.Tensor4D, vi as tf.Tensor4D, mask, T) as tf.Tensor2D, outputWeights)))([q, k, v]);
      const values = grads.map((g) => g.dataSync());
      tf.dispose(grads);
      return values;
    };
    const one = gradients();
    const divided = jest.spyOn(MatMulThreads.prototype, 'runAttentionBackward');
    try {
      for (const count of [2, 3]) {
        startMatMulThreads(count);
        for (let run = 0; run < 2; run++) {
          const many = gradients();
          many.forEach((values, i) => expect(values.filter((x, j) => !Object.is(x, one[i][j])).length).toBe(0));
        }
        await stopMatMulThreads();
      }
      expect(divided).toHaveBeenCalledTimes(4);
    } finally {
      divided.mockRestore();
      tf.dispose([q, k, v, outputWeights, mask]);
    }
  });

  it('packs a small operand for one call into tfjs\'s heap when asked, while threads run', () => {
    startMatMulThreads(2);
    const w = weights(64, 8, false, 2);
    const x = tf.randomNormal([5, 64], 0, 1, 'float32', 3) as tf.Tensor2D;
    const local = packWeights(w, 'f32', { onThreads: false }) as PackedWeights;
    expect(local.threaded).toBeNull();
    expect(local.panels).not.toBeNull();
    const y = packedMatMul(x, local) as tf.Tensor2D;
    expect(maxAbsDiff(y.dataSync(), tf.matMul(x, w).dataSync())).toBeLessThan(1e-5);
    tf.dispose([w, x, y]);
    local.dispose();
  });

  it('runs no other product while an input gradient is begun, and finishes it when the work alongside throws', async () => {
    startMatMulThreads(2);
    const w = weights(64, 128, false, 3);
    const shared = packWeights(w, 'f32') as PackedWeights;
    const [dy, x] = [tf.randomNormal([16, 128], 0, 1, 'float32', 1) as tf.Tensor2D, tf.randomNormal([16, 64], 0, 1, 'float32', 2) as tf.Tensor2D];
    try {
      expect(() => packedMatMulTransposedAlongside(dy, shared, () => packedMatMul(x, shared))).toThrow(/an input gradient was begun and not finished/);
      const after = packedMatMulTransposedAlongside(dy, shared, () => 1)?.dx as tf.Tensor2D;
      const plain = packedMatMulTransposed(dy, shared) as tf.Tensor2D;
      expect(Array.from(after.dataSync())).toEqual(Array.from(plain.dataSync()));
      tf.dispose([after, plain]);
    } finally {
      tf.dispose([w, dy, x]);
      shared.dispose();
    }
  });

  it('refuses weights whose threads were stopped, and packs into tfjs again once stopped', async () => {
    startMatMulThreads(2);
    expect(matmul.matMulThreads()).toBe(2);
    expect(() => startMatMulThreads(3)).toThrow(/already running 2, not 3/);
    const w = weights(64, 64, false, 1);
    const shared = packWeights(w) as PackedWeights;
    await stopMatMulThreads();
    expect(matmul.matMulThreads()).toBe(1);
    expect(() => packedMatMul(tf.ones([1, 64]) as tf.Tensor2D, shared)).toThrow(/threads that have been stopped/);
    const alone = packWeights(w) as PackedWeights;
    expect(alone.threaded).toBeNull();
    tf.dispose([w]);
    alone.dispose();
  });

  it('decodes a model to the same tokens with its weights on 2 threads as on one', async () => {
    const dir = makeTiny('matmul-threads', { preset: 'tiny' });
    const run = async (threads: number) => {
      const lm = await loadModel(dir, { inferenceOnly: true, matmulThreads: threads });
      try {
        expect(lm.model.packedWeights().every((p) => (p.threaded !== null) === threads > 1)).toBe(true);
        const results = await generateBatch(lm, [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10]], { maxTokens: 12, temperature: 0, ignoreEos: true });
        return results.map((r) => r.tokenIds);
      } finally {
        lm.dispose();
      }
    };
    const one = await run(1);
    expect(await run(2)).toEqual(one);
  });

  it('prefills a prompt with every projection on the kernel, divided between 2 threads, to the plain-JS reference logits', async () => {
    const dir = makeTiny('prefill-threads', { overrides: { numLayers: 2 }, initStd: 0.2 });
    const lm = await loadModel(dir, { inferenceOnly: true, matmulThreads: 2 });
    try {
      // Released weights: a projection that left the kernel for tf.matMul would throw.
      expect(lm.model.linears().every(({ linear }) => linear.released)).toBe(true);
      expect(lm.model.packedWeights().every((p) => p.threaded !== null)).toBe(true);
      const tokens = Array.from({ length: 40 }, (_, i) => 3 + ((i * 53) % 500));
      const cache = lm.model.newCache();
      cache.addEmptyRow();
      const logits = lm.model.forward([tokens], { cache });
      const ours = rowsOf(logits);
      logits.dispose();
      cache.dispose();
      const ref = referenceForward(dir, tokens);
      ours.forEach((row, t) => expect(maxAbsDiff(row, ref[t])).toBeLessThan(1e-4));
    } finally {
      lm.dispose();
    }
  });
});

describe('LoRA training on matmul threads', () => {
  beforeAll(() => useBackend('wasm'));
  afterEach(() => stopMatMulThreads());

  it('trains to the same losses, gradient norms and adapters, to the bit, on 2 and 3 threads as on one', async () => {
    // 64 tokens: every frozen product of the tiny model (K 64 to 160, N 64 to 512) is large
    // enough to be divided between the threads.
    const dir = makeTiny('train-threads');
    let seed = 5;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const steps = Array.from({ length: 3 }, () => {
      const tokens = Array.from({ length: 64 }, () => 3 + Math.floor(random() * 500));
      return [{ tokens, mask: tokens.map((_, i) => (i < 8 ? 0 : 1)) }];
    });
    const train = async (threads: number) => {
      const lm = await loadModel(dir, { matmulThreads: threads });
      const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC);
      try {
        const results = [];
        let kernels: string[] = [];
        for (const [i, step] of steps.entries()) {
          if (i === 0) {
            const profile = await tf.profile(() => trainer.sftStepOnTokens(step, 1e-2));
            kernels = profile.kernels.map((k) => k.name);
            results.push(await (profile.result as unknown as Promise<{ loss: number; gradNorm: number }>));
          } else {
            results.push(await trainer.sftStepOnTokens(step, 1e-2));
          }
        }
        expect(lm.model.packedWeights().every((p) => (p.threaded !== null) === threads > 1)).toBe(true);
        const adapters = trainer.attachment.variables().map((v) => Array.from(v.dataSync()));
        return { results, adapters, kernels };
      } finally {
        trainer.dispose();
        lm.dispose();
      }
    };
    const one = await train(1);
    const two = await train(2);
    await stopMatMulThreads();
    const three = await train(DIVIDED_BACKWARD_THREADS);
    // One thread: the frozen product and the deltas in one call, the backward's after the frozen dx.
    expect(one.kernels).toEqual(expect.arrayContaining(['TrainyardLoraProjection', 'TrainyardPackedMatMulTransposed', 'TrainyardLoraBackward']));
    expect(one.kernels).not.toContain('TrainyardLoraForward');
    // Threads: the lm_head's products alone, the adapted projections' forward with their
    // deltas; on two the adapters' backward on the calling thread beside the frozen dx, on
    // DIVIDED_BACKWARD_THREADS and more divided with it.
    for (const many of [two, three]) {
      expect(many.kernels).toEqual(expect.arrayContaining(['TrainyardThreadedMatMul', 'TrainyardThreadedMatMulTransposed', 'TrainyardLoraProjection']));
      expect(many.kernels).not.toContain('TrainyardPackedMatMulTransposed');
    }
    expect(two.kernels).toEqual(expect.arrayContaining(['TrainyardThreadedMatMulTransposedFinish', 'TrainyardLoraBackward']));
    expect(two.kernels).not.toContain('TrainyardThreadedLoraBackward');
    expect(three.kernels).toContain('TrainyardThreadedLoraBackward');
    expect(three.kernels).not.toContain('TrainyardLoraBackward');
    expect(one.results[2].loss).toBeLessThan(one.results[0].loss);
    for (const many of [two, three]) {
      expect(many.results).toEqual(one.results);
      expect(many.adapters).toEqual(one.adapters);
    }
  });
});

describe('Arena: the shared memory allocator', () => {
  const memory = () => sharedMemory(1024);

  it('never gives out offset 0 (a bias at 0 is none), aligns blocks to cache lines, and grows the memory', () => {
    const m = memory();
    const arena = new Arena(m);
    const a = arena.allocate(10);
    const b = arena.allocate(100 << 10);
    expect(a).toBeGreaterThan(0);
    expect([a % 64, b % 64]).toEqual([0, 0]);
    expect(b).toBeGreaterThanOrEqual(a + 64);
    expect(m.buffer.byteLength).toBeGreaterThanOrEqual(b + (100 << 10));
    expect(arena.used).toBe(64 + (100 << 10));
  });

  it('reuses released blocks, first fit, and merges neighbours', () => {
    const arena = new Arena(memory());
    const [a, b, c] = [arena.allocate(640), arena.allocate(640), arena.allocate(640)];
    arena.allocate(64);
    arena.release(a, 640);
    arena.release(b, 640);
    // a and b merged: a block of 1280 fits where they were.
    expect(arena.allocate(1280)).toBe(a);
    arena.release(c, 640);
    expect(arena.allocate(64)).toBe(c);
    expect(arena.used).toBe(1280 + 64 + 64);
  });
});
