import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { DecodeBatch } from '../src/decode-batch';
import { bf16ToF32, f32ToBf16, halfPairs, HalfDtype } from '../src/dtype';
import { frozenLinear, frozenLinearTransposed } from '../src/kernels/frozen-linear.webgpu';
import { countGpuWork } from '../src/kernels/gpu-counters';
import { PRODUCT_TILES, ProductTile, setProductPrefetch, setProductTiles } from '../src/kernels/tiled-product.wgsl';
import { setFusedKernels } from '../src/kernels/webgpu-program';
import { loadModel, LoadedModel } from '../src/loader';
import { applyAdapter } from '../src/lora/lora-layer';
import { DEFAULT_LORA_SPEC, initLoraWeights } from '../src/lora/peft';
import type { FrozenLinear } from '../src/model/linear';
import { SeededRandom } from '../src/random';
import { argmax } from '../src/sampling';
import { LoraTrainer } from '../src/training/trainer';
import { makeTiny, maxAbsDiff, webgpuUnavailable } from './helpers';

/**
 * A model on webgpu holds a bf16 or f16 checkpoint's projections in 16 bits (loader.ts,
 * model/linear.ts's HalfWeight): half the bytes of f32 on the GPU, and the same logits as the
 * cpu backend on the same weights, through the encoded decoding step (decode-step.webgpu.ts),
 * with a LoRA adapter on top, and through the generic forward pass that prompt scoring runs
 * (kernels/frozen-linear.webgpu.ts, whose products are also checked with f32 weights); and a LoRA SFT step on them is the step on their f32 copy
 * (gpuWeights 'f32'). On lavapipe where there is no GPU; in CI a missing adapter fails these
 * tests.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) console.warn(`webgpu 16-bit weight tests skipped: ${unavailable}`);
const suite = unavailable && !inCi ? describe.skip : describe;

/** Qwen2's layout (a q|k|v bias, tied embeddings: the lm_head is the embedding's transpose) at the tiny size. */
const QWEN2 = { modelType: 'qwen2' as const, tieWordEmbeddings: true };

function projections(lm: LoadedModel): FrozenLinear[] {
  return [...lm.model.blocks.flatMap((b) => [b.attention.qkv, b.attention.o, b.mlp.gateUp, b.mlp.down]), lm.model.lmHead];
}

const PROMPTS = [
  [1, 30, 31, 32, 33],
  [1, 7, 8],
];

/** Each prompt's logits after joining, then `steps` greedy steps of every row's logits. */
async function decode(lm: LoadedModel, steps: number): Promise<Float32Array[]> {
  const batch = new DecodeBatch<number>(lm.model);
  const out: Float32Array[] = [];
  try {
    const next = new Map<number, number>();
    for (const [id, prompt] of PROMPTS.entries()) {
      const logits = await batch.join(id, prompt);
      out.push(logits);
      next.set(id, argmax(logits));
    }
    for (let s = 0; s < steps; s++) {
      const logits = await batch.step(next);
      for (const [id, values] of logits) {
        out.push(values);
        next.set(id, argmax(values));
      }
    }
    return out;
  } finally {
    batch.dispose();
  }
}

/** A prompt's logprobs, scored by the generic forward pass (DecodeBatch.joinScored), and its last logits. */
async function scored(lm: LoadedModel): Promise<Float32Array[]> {
  const batch = new DecodeBatch<number>(lm.model);
  try {
    const { logits, scores } = await batch.joinScored(0, [1, 40, 41, 42, 43, 44, 45], 0);
    return [logits, scores.logprobs];
  } finally {
    batch.dispose();
  }
}

async function onCpuAndWebGpu<T>(dir: string, run: (lm: LoadedModel) => Promise<T>): Promise<{ cpu: T; gpu: T; gpuModel: LoadedModel }> {
  await selectBackend('cpu');
  const onCpu = await loadModel(dir);
  const cpu = await run(onCpu).finally(() => onCpu.dispose());
  await selectBackend('webgpu');
  const gpuModel = await loadModel(dir, { inferenceOnly: true });
  const gpu = await run(gpuModel).catch((err) => {
    gpuModel.dispose();
    throw err;
  });
  return { cpu, gpu, gpuModel };
}

function expectSameRows(gpu: Float32Array[], cpu: Float32Array[]): void {
  expect(gpu.length).toBe(cpu.length);
  cpu.forEach((values, i) => {
    expect(maxAbsDiff(gpu[i], values)).toBeLessThan(1e-5);
    expect(argmax(gpu[i])).toBe(argmax(values));
  });
}

suite('16-bit weights on webgpu', () => {
  afterAll(async () => {
    setFusedKernels(true);
    await selectBackend('wasm');
  });

  it.each<HalfDtype>(['BF16', 'F16'])('holds a %s checkpoint in half the bytes and decodes with the cpu backend logits', async (dtype) => {
    const dir = makeTiny(`half-${dtype}`, { dtype, overrides: QWEN2 });
    await selectBackend('webgpu');
    const before = tf.memory().numBytes;
    const full = await loadModel(dir, { gpuWeights: 'f32' });
    const fullBytes = tf.memory().numBytes - before;
    const weightFloats = projections(full).reduce((sum, l) => sum + l.inFeatures * l.outFeatures, 0);
    full.dispose();

    const { cpu, gpu, gpuModel } = await onCpuAndWebGpu(dir, (lm) => decode(lm, 4));
    try {
      expect(projections(gpuModel).map((l) => l.halfWeight?.dtype)).toEqual(projections(gpuModel).map(() => dtype));
      // Every projection's weight in 2 bytes a value instead of 4; nothing else changes.
      expect(tf.memory().numBytes - before).toBe(fullBytes - 2 * weightFloats);
      expectSameRows(gpu, cpu);
    } finally {
      gpuModel.dispose();
    }
  }, 120_000);

  it('decodes with a LoRA adapter on a bf16 base held in 16 bits', async () => {
    const dir = makeTiny('half-lora', { dtype: 'BF16', overrides: QWEN2 });
    const withAdapter = async (lm: LoadedModel) => {
      const tensors = initLoraWeights(lm.config, DEFAULT_LORA_SPEC, 3);
      for (const [name, t] of tensors) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.05 * Math.sin(i + name.length)));
      const adapter = applyAdapter(lm, { spec: DEFAULT_LORA_SPEC, tensors });
      return decode(lm, 3).finally(() => adapter.dispose());
    };
    const { cpu, gpu, gpuModel } = await onCpuAndWebGpu(dir, withAdapter);
    gpuModel.dispose();
    expectSameRows(gpu, cpu);
  }, 120_000);

  it('scores a prompt through the generic forward pass, with the engine kernels on and off', async () => {
    const dir = makeTiny('half-scored', { dtype: 'BF16', overrides: QWEN2 });
    const { cpu, gpu, gpuModel } = await onCpuAndWebGpu(dir, scored);
    try {
      expectSameRows(gpu, cpu);
      // tfjs's matMul cannot read the 16-bit words: the program that does runs with the kernels off too.
      setFusedKernels(false);
      expectSameRows(await scored(gpuModel), cpu);
    } finally {
      setFusedKernels(true);
      gpuModel.dispose();
    }
  }, 120_000);

  it('trains LoRA on a bf16 checkpoint held in 16 bits as on its f32 copy', async () => {
    // Adapters on q and v only: o, gate|up, down and the tied lm_head train through as frozen projections (their dx from the 16 bits too).
    const dir = makeTiny('half-train', { dtype: 'BF16', overrides: QWEN2 });
    const spec = { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] } as const;
    const rows = [0, 1].map((r) => ({ tokens: Array.from({ length: 24 }, (_, i) => 3 + ((r * 7919 + i * 104729) % 400)), mask: Array.from({ length: 24 }, (_, i) => (i < 4 ? 0 : 1)) }));
    const step = async (gpuWeights: 'checkpoint' | 'f32') => {
      const lm = await loadModel(dir, { gpuWeights });
      const tensors = initLoraWeights(lm.config, { ...spec, targetModules: [...spec.targetModules] }, 3);
      for (const [name, t] of tensors) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.05 * Math.cos(i + name.length)));
      const trainer = new LoraTrainer(lm, { ...spec, targetModules: [...spec.targetModules] }, tensors);
      try {
        const held = projections(lm).map((l) => l.halfWeight?.dtype ?? 'F32');
        const { loss, gradNorm } = await trainer.sftStepOnTokens(rows, 1e-2);
        const after = await Promise.all(trainer.attachment.variables().map(async (v) => (await v.data()) as Float32Array));
        return { held, loss, gradNorm, after };
      } finally {
        trainer.dispose();
        lm.dispose();
      }
    };
    await selectBackend('webgpu');
    const [half, full] = [await step('checkpoint'), await step('f32')];
    expect(new Set(half.held)).toEqual(new Set(['BF16']));
    expect(new Set(full.held)).toEqual(new Set(['F32']));
    expect(Math.abs(half.loss - full.loss)).toBeLessThan(1e-5 * Math.abs(full.loss));
    expect(Math.abs(half.gradNorm - full.gradNorm)).toBeLessThan(1e-4 * full.gradNorm);
    half.after.forEach((values, i) => expect(maxAbsDiff(values, full.after[i])).toBeLessThan(1e-6));
  }, 120_000);

  /**
   * The frozen products both ways, x W + b and dy W^T, of a [K, N] weight (held in `dtype`) in
   * `tile`s, prefetched or not, split or not, against the cpu backend's on the weight's values;
   * `dispatches` is what the two products take.
   */
  async function checkFrozenProducts([M, K, N]: number[], tile: ProductTile, dtype: 'BF16' | 'F32', prefetch: boolean, split: boolean, dispatches: number): Promise<void> {
    const rng = new SeededRandom(7);
    const values = (n: number) => Float32Array.from({ length: n }, () => 2 * rng.next() - 1);
    const [x, w, bias, dy] = [values(M * K), values(K * N), values(N), values(M * N)];
    const exact = dtype === 'BF16' ? bf16ToF32(f32ToBf16(w)) : w;
    await selectBackend('cpu');
    const want = tf.tidy(() => {
      const W = tf.tensor2d(exact, [K, N]);
      return [tf.add(tf.matMul(tf.tensor2d(x, [M, K]), W), tf.tensor1d(bias)), tf.matMul(tf.tensor2d(dy, [M, N]), W, false, true)].map((t) => t.dataSync() as Float32Array);
    });
    await selectBackend('webgpu');
    setProductTiles(tile);
    setProductPrefetch(prefetch);
    const weight = dtype === 'BF16' ? { pairs: tf.tensor2d(halfPairs(w, 'BF16'), [K, N / 2], 'int32'), dtype } : tf.tensor2d(w, [K, N]);
    const inputs = [tf.tensor2d(x, [M, K]), tf.tensor1d(bias), tf.tensor2d(dy, [M, N]), 'pairs' in weight ? weight.pairs : weight] as const;
    try {
      const [X, b, dY] = inputs;
      const got = await countGpuWork(async () => [frozenLinear(X, weight, b, split), frozenLinearTransposed(dY, weight, split)]);
      expect(got.counts.dispatches).toBe(dispatches);
      for (const [i, t] of got.result.entries()) expect(maxAbsDiff((await t.data()) as Float32Array, want[i])).toBeLessThan(1e-5 * Math.max(...want[i].map(Math.abs)));
      tf.dispose(got.result);
    } finally {
      setProductTiles('auto');
      setProductPrefetch(false);
      tf.dispose([...inputs]);
    }
  }

  // Every tile, for a weight held in 16 bits and an f32 one (the lm_head of a training step, a projection without adapters), each step's operands loaded a step ahead or not (setProductPrefetch).
  it.each(PRODUCT_TILES.flatMap((tile) => (['BF16', 'F32'] as const).flatMap((dtype) => [false, true].map((prefetch) => [tile, dtype, prefetch] as const))))(
    'multiplies as the cpu backend by the weight\'s values, both ways, tiles of %i, weight %s, prefetched %s',
    // 5 row tiles of 64 (3 of 128), the last part-filled; 3 column tiles of 64 the other way; a dispatch each way.
    (tile, dtype, prefetch) => checkFrozenProducts([300, 136, 72], tile, dtype, prefetch, false, 2),
    120_000,
  );

  // Split along the inner dimension (frozenLinear's `split`): K = 520 walked by 4 splits of 144 (the last 88), N = 264 by 2 (144, then 120).
  it.each(([64, 128] as const).flatMap((tile) => (['BF16', 'F32'] as const).flatMap((dtype) => [false, true].map((prefetch) => [tile, dtype, prefetch] as const))))(
    'multiplies as the cpu backend with the inner dimension split, its splits and the bias added after, tiles of %i, weight %s, prefetched %s',
    // Each product's splits, then their sum.
    (tile, dtype, prefetch) => checkFrozenProducts([100, 520, 264], tile, dtype, prefetch, true, 4),
    120_000,
  );

  it('says how to get an f32 copy, and refuses a taped gradient through a 16-bit weight outside training', async () => {
    await selectBackend('webgpu');
    const lm = await loadModel(makeTiny('half-grad', { dtype: 'BF16' }), { inferenceOnly: true });
    try {
      const qkv = lm.model.blocks[0].attention.qkv;
      expect(() => qkv.weightT).toThrow(/q_proj\|k_proj\|v_proj: its weight is held in 16 bits \(BF16\), which only webgpu's programs read; load the model with gpuWeights 'f32'/);
      const x = tf.ones([1, qkv.inFeatures]) as tf.Tensor2D;
      expect(() => tf.grad((input: tf.Tensor) => tf.sum(qkv.forward(input as tf.Tensor2D)))(x)).toThrow(/has a gradient only in a training pass/);
      x.dispose();
    } finally {
      lm.dispose();
    }
  }, 60_000);
});
