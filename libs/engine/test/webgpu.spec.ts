/// <reference types="@webgpu/types" />
import * as tf from '@tensorflow/tfjs-core';
import { BackendInfo, selectBackend } from '../src/backend';
import { DecodeBatch } from '../src/decode-batch';
import { loadModel } from '../src/loader';
import { LoraAttachment, applyAdapter } from '../src/lora/lora-layer';
import { LoraRouter } from '../src/lora/lora-router';
import { AdapterTensors, DEFAULT_LORA_SPEC, LoraSpec, initLoraWeights } from '../src/lora/peft';
import { checkpointedGradients, nextTokenRows } from '../src/training/checkpointing';
import { RLPlan } from '../src/training/rl-steps';
import { buildRlSequence, Tokenizing } from '../src/training/sequences';
import { LoraTrainer, StepMetrics } from '../src/training/trainer';
import { parametersADispatch } from '../src/kernels/adamw.webgpu';
import { storageBufferLimit } from '../src/kernels/webgpu-program';
import { adapterFeatures } from '../src/webgpu';
import { BufferManagerInternals, bufferPoolBytes, setBufferPoolBytes } from '../src/webgpu-buffer-pool';
import { makeTiny, maxAbsDiff, webgpuUnavailable } from './helpers';
import { PPO, rlConfig } from './training/rl-config';

/**
 * The engine's generic tfjs path on webgpu (Dawn over Vulkan) gives what it gives on cpu and wasm:
 * logits, cached and batched decoding with adapters, an SFT and an RL step, the exported
 * adapter. Where no GPU is present, Mesa's lavapipe is the adapter (scripts/lib/common.sh
 * ensure_vulkan installs it): slow, so the model is the tiny preset. In CI (CI=true) a missing
 * adapter fails these tests instead of skipping them.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) {
  console.warn(`webgpu tests skipped: ${unavailable} (install a Vulkan driver: scripts/lib/common.sh ensure_vulkan)`);
}
const suite = unavailable && !inCi ? describe.skip : describe;

type Compared = 'cpu' | 'wasm' | 'webgpu';

const LR = 1e-2;

const TOKENS = [1, 300, 301, 20, 21, 22, 2, 40];
const PROMPTS = [
  [1, 300, 301, 302],
  [1, 400, 20, 21, 22, 23],
  [1, 5, 6],
];
const SFT = [
  { messages: [{ role: 'user', content: 'capital of France?' }, { role: 'assistant', content: 'Paris' }] },
  { messages: [{ role: 'user', content: 'two plus two' }, { role: 'assistant', content: 'four' }] },
];

/** Everything compared, computed on one backend. */
interface Outcome {
  backend: BackendInfo;
  logits: Float32Array;
  cachedStep: Float32Array;
  /** Per step, per sequence: the logits of a decode batch whose rows run under different adapters. */
  batched: Float32Array[][];
  /** LoRA gradients of a next-token loss, by variable in layer order, and the loss. */
  gradients: Float32Array[];
  gradientLoss: number;
  sft: StepMetrics;
  sftAdapter: AdapterTensors;
  rl: StepMetrics;
  rlAdapter: AdapterTensors;
  /** Tensors alive after everything was disposed, minus those alive before. */
  leaked: number;
}

/** An adapter with non-zero B (a fresh one is the identity), different for each seed. */
function servingAdapter(lm: Awaited<ReturnType<typeof loadModel>>, spec: LoraSpec, seed: number): LoraAttachment {
  const tensors = initLoraWeights(lm.config, spec, seed);
  for (const [name, t] of tensors) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.2 * Math.sin(seed * 7 + 3 * i)));
  const a = applyAdapter(lm, { spec, tensors });
  a.detach();
  return a;
}

/** One step of two answers to one prompt, advantages 1 and -1, with sampling log-probs off the policy's. */
function rlPlan(lm: Tokenizing): RLPlan {
  const item = (tokenIds: number[], logprobs: number[], advantage: number) => ({
    sequence: buildRlSequence(lm, { messagesAndChoices: [{ role: 'user', content: 'pick' }, { choice: { tokenIds, logprobs, message: { role: 'assistant', content: 'x' } } }] }),
    advantage,
  });
  return { steps: [[item([40, 42, 44], [-6.1, -6.4, -5.9], 1), item([41, 43, 45], [-6.3, -6.0, -6.2], -1)]], learningRate: LR };
}

async function outcome(name: Compared, dir: string): Promise<Outcome> {
  const backend = await selectBackend(name);
  const before = tf.memory().numTensors;
  const lm = await loadModel(dir);
  try {
    const full = lm.model.forward([TOKENS]);
    const logits = (await full.data()) as Float32Array;
    full.dispose();
    const cache = lm.model.newCache();
    cache.addEmptyRow();
    lm.model.forward([TOKENS.slice(0, 5)], { cache }).dispose();
    const step = lm.model.forward([[TOKENS[5]]], { cache });
    const cachedStep = (await step.data()) as Float32Array;
    step.dispose();
    cache.dispose();

    // Continuous batching with a LoRA per row (one without), three decode steps.
    const first = servingAdapter(lm, DEFAULT_LORA_SPEC, 1);
    const second = servingAdapter(lm, { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'down_proj'] }, 2);
    const router = new LoraRouter(lm.model);
    const batch = new DecodeBatch<number>(lm.model);
    const routing = [first, null, second];
    const batched: Float32Array[][] = [];
    try {
      const joined: Float32Array[] = [];
      for (const [i, prompt] of PROMPTS.entries()) {
        router.route([routing[i]]);
        joined.push(await batch.join(i, prompt));
      }
      batched.push(joined);
      router.route(routing);
      for (let s = 0; s < 3; s++) {
        const out = await batch.step(new Map(PROMPTS.map((_, i) => [i, 50 + 10 * s + i])));
        batched.push(PROMPTS.map((_, i) => out.get(i) as Float32Array));
      }
    } finally {
      router.route([]);
      batch.dispose();
      router.dispose();
      first.dispose();
      second.dispose();
    }

    // LoRA gradients (activation checkpointing, entropies too) under an adapter with non-zero B.
    const spec: LoraSpec = { r: 4, alpha: 16, targetModules: DEFAULT_LORA_SPEC.targetModules };
    const init = initLoraWeights(lm.config, spec, 9);
    for (const [key, t] of init) if (key.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.05 * Math.cos(5 * i + key.length)));
    const gradTrainer = new LoraTrainer(lm, spec, init);
    const gradients: Float32Array[] = [];
    let gradientLoss: number;
    try {
      const variables = gradTrainer.attachment.variablesByLayer();
      const loss = (lp: tf.Tensor2D) => tf.neg(tf.mean(lp)) as tf.Scalar;
      const { value, grads } = await checkpointedGradients(lm.model, nextTokenRows([TOKENS, PROMPTS[1]]), variables, loss, { chunk: 64, withEntropy: true });
      gradientLoss = value;
      for (const v of variables.flat()) gradients.push((await (grads.get(v.name) as tf.Tensor).data()) as Float32Array);
      grads.forEach((g) => g.dispose());
    } finally {
      gradTrainer.dispose();
    }

    // One SFT step from a fresh adapter; one RL step from the adapter above, so that the KL
    // penalty against the base model is not zero.
    const sftTrainer = new LoraTrainer(lm, spec, undefined, { seed: 5 });
    let sft: StepMetrics;
    let sftAdapter: AdapterTensors;
    try {
      [sft] = await sftTrainer.trainSft(SFT, { batchSize: 2, learningRate: LR, assistantTurns: 'all' });
      sftAdapter = await sftTrainer.exportAdapter();
    } finally {
      sftTrainer.dispose();
    }
    const config = rlConfig({ ...PPO, klPenaltyCoef: 0.1 });
    const rlTrainer = new LoraTrainer(lm, spec, init);
    let rl: StepMetrics;
    let rlAdapter: AdapterTensors;
    try {
      [rl] = await rlTrainer.trainRl(rlPlan(lm), config);
      rlAdapter = await rlTrainer.exportAdapter();
    } finally {
      rlTrainer.dispose();
    }
    lm.dispose();
    return { backend, logits, cachedStep, batched, gradients, gradientLoss, sft, sftAdapter, rl, rlAdapter, leaked: tf.memory().numTensors - before };
  } catch (err) {
    lm.dispose();
    throw err;
  }
}

function adapterDifference(a: AdapterTensors, b: AdapterTensors): number {
  expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
  return Math.max(...[...a].map(([name, t]) => maxAbsDiff(t.data, (b.get(name) as { data: Float32Array }).data)));
}

suite('webgpu gives the results of cpu and wasm (tiny model)', () => {
  let webgpu: Outcome;
  /** The references: webgpu is held to the same bounds against each. */
  let references: Outcome[];
  /** webgpu again with tfjs's pool of free buffers bounded to nothing: every buffer freed is destroyed at once. */
  let unpooled: Outcome;

  beforeAll(async () => {
    const dir = makeTiny('webgpu', { overrides: { modelType: 'qwen2' } });
    references = [await outcome('cpu', dir), await outcome('wasm', dir)];
    webgpu = await outcome('webgpu', dir);
    // The bound the backend takes as it starts (outcome selects it).
    const bound = bufferPoolBytes();
    setBufferPoolBytes(0);
    try {
      unpooled = await outcome('webgpu', dir);
      expect((tf.backend() as unknown as { bufferManager: BufferManagerInternals }).bufferManager.numFreeBuffers).toBe(0);
    } finally {
      setBufferPoolBytes(bound);
    }
  }, 400_000);
  afterAll(() => selectBackend('wasm'));

  it('ran on a WebGPU adapter and reports it', () => {
    expect(webgpu.backend.name).toBe('webgpu');
    expect(webgpu.backend.adapter?.vendor).toBeTruthy();
    // A software adapter is never reported as a GPU.
    expect(webgpu.backend.gpu).toBe(!webgpu.backend.adapter?.fallback);
  });

  it("binds as many storage buffers a program as the adapter offers, and timestamp queries, on the engine's device", async () => {
    await selectBackend('webgpu');
    const gpu = (globalThis as unknown as { navigator: { gpu: GPU } }).navigator.gpu;
    const adapter = (await gpu.requestAdapter({ powerPreference: 'high-performance' })) as GPUAdapter;
    const device = (tf.backend() as unknown as { device: GPUDevice }).device;
    expect(device.limits.maxStorageBuffersPerShaderStage).toBe(adapter.limits.maxStorageBuffersPerShaderStage);
    expect(storageBufferLimit()).toBe(adapter.limits.maxStorageBuffersPerShaderStage);
    expect(device.features.has('timestamp-query')).toBe(adapter.features.has('timestamp-query'));
    // Lavapipe binds 16, past WebGPU's default of 8: the optimizer then updates four parameters a dispatch.
    if (webgpu.backend.adapter?.vendor === 'mesa') expect(parametersADispatch()).toBe(4);
  });

  it("lists the adapter's features, Dawn's experimental ones included, and its subgroup matrices", async () => {
    const offered = await adapterFeatures();
    expect(offered?.features).toEqual(expect.arrayContaining(['timestamp-query']));
    // Dawn lists an experimental feature only where its unsafe APIs are allowed: this instance allows them.
    expect(offered?.features.some((f) => f.startsWith('chromium-experimental-'))).toBe(true);
    expect(Array.isArray(offered?.subgroupMatrixConfigs)).toBe(true);
  });

  it('gives the same logits, and the same logits from a cached decode step', () => {
    for (const ref of references) {
      expect(maxAbsDiff(webgpu.logits, ref.logits)).toBeLessThan(1e-5);
      expect(maxAbsDiff(webgpu.cachedStep, ref.cachedStep)).toBeLessThan(1e-5);
    }
    const V = webgpu.cachedStep.length;
    expect(maxAbsDiff(webgpu.cachedStep, webgpu.logits.slice(5 * V, 6 * V))).toBeLessThan(1e-5);
  });

  it('gives every row of a batch decoding under different adapters the logits it gets elsewhere', () => {
    for (const ref of references) {
      webgpu.batched.forEach((rows, s) => rows.forEach((row, i) => expect(maxAbsDiff(row, ref.batched[s][i])).toBeLessThan(1e-5)));
    }
    // The adapters matter: rows under different adapters differ from the base model's.
    expect(maxAbsDiff(webgpu.batched[1][0], webgpu.batched[1][1])).toBeGreaterThan(1e-3);
  });

  it('gives the same LoRA gradients', () => {
    for (const ref of references) {
      expect(Math.abs(webgpu.gradientLoss - ref.gradientLoss)).toBeLessThan(1e-5);
      const scale = Math.max(...ref.gradients.map((g) => Math.max(...Array.from(g, Math.abs))));
      expect(scale).toBeGreaterThan(1e-3);
      webgpu.gradients.forEach((g, i) => expect(maxAbsDiff(g, ref.gradients[i])).toBeLessThan(1e-5 * scale));
    }
  });

  // AdamW's first step moves every weight by about the learning rate whatever the size of its
  // gradient, so a gradient within rounding of zero can move differently: the exported adapters
  // agree to a small fraction of the learning rate, not to float precision.
  it('takes the same SFT step and exports the same adapter', () => {
    for (const ref of references) {
      expect(Math.abs(webgpu.sft['loss'] - ref.sft['loss'])).toBeLessThan(1e-5);
      expect(Math.abs(webgpu.sft['grad_norm'] - ref.sft['grad_norm'])).toBeLessThan(1e-5);
      expect(adapterDifference(webgpu.sftAdapter, ref.sftAdapter)).toBeLessThan(1e-2 * LR);
    }
  });

  it('takes the same RL step (ppo with a KL penalty) and exports the same adapter', () => {
    for (const ref of references) {
      expect(ref.rl['kl_div']).toBeGreaterThan(0);
      for (const key of ['loss', 'grad_norm', 'entropy', 'kl_div']) expect(Math.abs(webgpu.rl[key] - ref.rl[key])).toBeLessThan(1e-5);
      expect(adapterDifference(webgpu.rlAdapter, ref.rlAdapter)).toBeLessThan(1e-2 * LR);
    }
  });

  // A buffer destroyed while work still to be submitted uses it fails that submit, and a buffer
  // read before it is written reads what its last tensor left: either would show here.
  it('gives the same results when no freed buffer is kept for reuse', () => {
    expect(unpooled.logits).toEqual(webgpu.logits);
    expect(unpooled.cachedStep).toEqual(webgpu.cachedStep);
    expect(unpooled.batched).toEqual(webgpu.batched);
    expect(unpooled.gradients).toEqual(webgpu.gradients);
    // Every metric but the step's speed.
    const untimed = ({ tokens_per_second: _, ...metrics }: StepMetrics) => metrics;
    expect(untimed(unpooled.sft)).toEqual(untimed(webgpu.sft));
    expect(untimed(unpooled.rl)).toEqual(untimed(webgpu.rl));
    expect(untimed(webgpu.rl)['loss']).toBeDefined();
    expect(adapterDifference(unpooled.rlAdapter, webgpu.rlAdapter)).toBe(0);
    expect(unpooled.leaked).toBe(0);
  });

  it('leaks no tensors', () => {
    expect([webgpu, ...references].map((o) => o.leaked)).toEqual([0, 0, 0]);
  });

  if (process.env['WEBGPU_PRINT_DIFFERENCES']) {
    it('prints the largest differences', () => {
      const [cpu] = references;
      const scale = Math.max(...cpu.gradients.map((g) => Math.max(...Array.from(g, Math.abs))));
      console.log(
        JSON.stringify({
          adapter: webgpu.backend.adapter,
          logits: maxAbsDiff(webgpu.logits, cpu.logits),
          cachedStep: maxAbsDiff(webgpu.cachedStep, cpu.cachedStep),
          batched: Math.max(...webgpu.batched.flatMap((rows, s) => rows.map((row, i) => maxAbsDiff(row, cpu.batched[s][i])))),
          gradientsRelative: Math.max(...webgpu.gradients.map((g, i) => maxAbsDiff(g, cpu.gradients[i]))) / scale,
          sft: { loss: webgpu.sft['loss'] - cpu.sft['loss'], gradNorm: webgpu.sft['grad_norm'] - cpu.sft['grad_norm'], adapter: adapterDifference(webgpu.sftAdapter, cpu.sftAdapter) },
          rl: { loss: webgpu.rl['loss'] - cpu.rl['loss'], kl: webgpu.rl['kl_div'] - cpu.rl['kl_div'], adapter: adapterDifference(webgpu.rlAdapter, cpu.rlAdapter) },
        }),
      );
    });
  }

  it('auto never takes a fallback adapter for a GPU', async () => {
    const auto = await selectBackend('auto');
    if (webgpu.backend.adapter?.fallback) {
      expect(auto.name).not.toBe('webgpu');
      expect(auto.notes.join(' ')).toMatch(/webgpu: only a fallback adapter/);
    } else {
      expect(auto.name).toBe('webgpu');
    }
  });
});
