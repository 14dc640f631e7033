/**
 * GPU throughput of the engine on WebGPU, with PyTorch eager on the same GPU and the same
 * weights as the peer. For SmolLM2-135M- and Qwen2.5-0.5B-shaped models (and, when named, 1.5B
 * and 3B ones; random weights from the model maker) it prints prefill tokens/s (one 512-token
 * prompt through DecodeBatch.join; on webgpu again with the prompt's products in tiles, and on
 * tensor cores where the device has them, engine only), decode tokens/s at batch 1, 32 and 128
 * (aggregate; greedy, through DecodeBatch.stepDrawn), at batch 1 and 128 again in runs of four
 * steps fed on the GPU (DecodeBatch.stepsDrawn; engine only), and so again with each run
 * submitted before the last is read back (stepsDrawnAfter; engine only), at batch 128 again with one row's
 * logits read back and with every row's (DecodeBatch.stepMixed; engine only), at batch 128 again with its products in
 * tiles, and on tensor cores where the device has them (engine only), prefill of a 4,096-token
 * prompt and decode at batch 1 after it (for the engine, again with the chunks' and the row's
 * cached columns walked by one workgroup a tile or a row rather than split among several),
 * decode at batch 1 again with Dawn's polling left to spin
 * rather than paced (dawn-polling.ts; engine only), decode with a LoRA adapter at the smallest and largest batch
 * (at the largest again with its products in tiles; engine only),
 * LoRA SFT tokens/s (r 8, alpha 16, all seven projections, AdamW, 4 sequences of 256 tokens a
 * step) and a step of ART's default RL loss on the same tokens (the last two rows the engine's
 * only), and where some of the step's products take 32 x 32 or 128 x 128 tiles by their size,
 * LoRA SFT again with every product in 64 x 64 (engine only), and where the device has tensor cores
 * (subgroup matrices, checked against the f32 tiles as the backend starts), LoRA SFT again with
 * the tiled products on them (engine only; every other row multiplies in f32), and LoRA SFT again
 * with the f32 tiles loading each step's operands a step ahead (setProductPrefetch; engine only), and
 * with the products' inner dimension split among workgroups (setProductSplits; engine only); with --f32-copy, for a shape stored in bf16 (the larger ones and the smoke run's
 * tiny-qwen2), which the engine holds in 16 bits on webgpu, also decode at the smallest and
 * largest batch on an f32 copy (gpuWeights 'f32'; engine only, kernels on); then where one
 * step's GPU time goes (WebGpuDecodeStep.profile) and where a LoRA SFT
 * step's goes, kernel by kernel (tf.profile). On webgpu the engine
 * runs its own WGSL (the encoded step and the fused kernels), or with --kernels off tfjs's
 * generic ops (WEBGPU_FUSED_KERNELS=off), or both in turn.
 *
 * On a GPU machine that has nothing but node (and python3 with torch for the peer), carry the
 * folder that pack.sh writes and run it there:
 *
 *   bash tools/bench/gpu/pack.sh tmp/gpu-bench     # here: bundle, dawn.node, libvulkan1 .deb
 *   bash tmp/gpu-bench/run.sh                      # there: unpacks libvulkan1, finds nvidia_icd.json
 *
 * Here, against Mesa's lavapipe (scripts/lib/common.sh ensure_vulkan), with tiny sizes, to
 * know that it runs:
 *
 *   npx tsx tools/bench/gpu/gpu.bench.ts --smoke
 *
 * Options: --smoke (tiny model, short prompts, batches 1, 4 and 64); --backend NAME (default
 * webgpu; wasm or cpu to compare on a CPU); --models DIR (where the model directories are
 * made, default a temporary directory; a model already there is reused); --no-peer (skip
 * PyTorch); --python PATH (the interpreter with torch, default python3); --only NAMES (models,
 * comma-separated: smollm2-135m, qwen2.5-0.5b, and the larger qwen2.5-1.5b and qwen2.5-3b,
 * measured only when named); --count (first print what a step costs in WebGPU work, one JSON
 * line: gpuCounts); --make (only make the named models' directories, then exit: a
 * larger model can be made in another process while the smaller ones are measured); --kernels on|off|both (webgpu's fused kernels;
 * default both, or WEBGPU_FUSED_KERNELS when it is set); --budget SECONDS (default 270: a
 * model's second engine pass, generic ops, is skipped when the run would take longer with it,
 * so that the whole run stays under 5 minutes); --f32-copy (the rows above: a second load of each
 * bf16 shape, its weights as f32); --kept-mb MB (what a training step may keep from
 * its forward pass for the backward, TrainerOptions.keptProductsBytes: default 16384 on webgpu,
 * where every block of the measured steps then runs its forward once, up to the 3B shape's
 * 6.4 GB; the engine's 1.5 GB elsewhere); --tiles auto|64|128 (the tiles of the training
 * step's and the 16-bit weights' tiled products, kernels/tiled-product.wgsl.ts: by each
 * product's size, the default, or all of one size, to measure one against the other);
 * --dispatches-per-submit N (tfjs's WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE, the engine's 64 unless
 * given: tfjs's own default is 15).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { BackendName, selectBackend, setDispatchesPerSubmit } from '../../../libs/engine/src/backend';
import { setDawnPolling } from '../../../libs/engine/src/dawn-polling';
import { adapterFeatures, setTensorCores } from '../../../libs/engine/src/webgpu';
import type { ModelConfig } from '../../../libs/engine/src/config';
import { DecodeBatch } from '../../../libs/engine/src/decode-batch';
import { setColumnSplits, setStepProducts, TILED_TOKENS, WebGpuDecodeStep } from '../../../libs/engine/src/kernels/decode-step.webgpu';
import { countGpuWork, GpuCounts, noGpuWork } from '../../../libs/engine/src/kernels/gpu-counters';
import type { RowDraw } from '../../../libs/engine/src/kernels/sample';
import { PRODUCT_TILES, ProductTile, productTiling, setProductPrefetch, setProductSplits, setProductTiles, SubgroupMatrices, useSubgroupMatrices } from '../../../libs/engine/src/kernels/tiled-product.wgsl';
import { fusedKernelsEnabled, setFusedKernels, storageBufferLimit } from '../../../libs/engine/src/kernels/webgpu-program';
import { loadModel, LoadedModel } from '../../../libs/engine/src/loader';
import { applyAdapter } from '../../../libs/engine/src/lora/lora-layer';
import { AdapterTensors, DEFAULT_LORA_SPEC, initLoraWeights } from '../../../libs/engine/src/lora/peft';
import { makeModel, Preset } from '../../../libs/engine/src/maker/make-model';
import { Block } from '../../../libs/engine/src/model/llama';
import { argmax } from '../../../libs/engine/src/sampling';
import { AdamW } from '../../../libs/engine/src/training/adamw';
import { LoraTrainer } from '../../../libs/engine/src/training/trainer';
import { BenchShape, benchShapes } from './bench-model';
import { ART_RL_DEFAULTS, rlPlanOf } from './bench-steps';

/** What is measured, and how big. */
interface Plan {
  prefillTokens: number;
  decodeBatches: number[];
  /** Prompt of each decoding sequence, and the steps timed after two untimed ones. */
  decodePrompt: number;
  decodeSteps: number;
  /** The prompt of one sequence decoded over a long cache. */
  longContext: number;
  /** SFT: sequences x tokens per step, and the steps timed after one untimed one. */
  trainRows: number;
  trainTokens: number;
  trainSteps: number;
}

/** Figures of one model on one backend, in tokens/s. */
interface Figures {
  prefill: number;
  /** A prefill's wall milliseconds and the main thread's CPU milliseconds in it (means of the timed runs), as sftHost. */
  prefillHost?: { wallMs: number; mainCpuMs: number };
  /** Prefill with the prompt's products in tiles rather than split along K (setStepProducts; the engine's only, kernels on), and the first logits it gave. */
  prefillTiled?: { rate: number; logits: number[] };
  /** Prefill with the prompt's products on tensor cores, where the device has them (the engine's only, kernels on), and the first logits it gave. */
  prefillTensorCores?: { rate: number; logits: number[] };
  decode: Record<string, number>;
  /** Decoding at the smallest and largest batch in runs of RUN_STEPS steps, each fed the tokens the one before drew on the GPU, read back once a run (DecodeBatch.stepsDrawn; the engine's only, kernels on). */
  decodeRuns?: Record<string, number>;
  /** The same with each run submitted before the one before it is read back (DecodeBatch.stepsDrawnAfter: the worker's DECODE_RUN_AHEAD). */
  decodeRunsAhead?: Record<string, number>;
  /** Decoding at the largest batch with one row's logits read back and the others drawn on the GPU (DecodeBatch.stepMixed: a batch where one request asks for top-k, top-p or top logprobs), and with every row's read back (the engine's only, kernels on). */
  decodeOneLogitRow?: Record<string, number>;
  decodeAllLogits?: Record<string, number>;
  /** Decoding at each batch of at least TILED_TOKENS rows with its products in tiles, and on tensor cores where the device has them, rather than split along K (setStepProducts; the engine's only, kernels on). */
  decodeTiled?: Record<string, number>;
  decodeTensorCores?: Record<string, number>;
  /** Decoding one sequence after a plan.longContext-token prompt; for the engine, again with each row's columns walked by one workgroup (setColumnSplits(false)). */
  longDecode?: number;
  longDecodeWhole?: number;
  /** Prefill of the plan.longContext-token prompt; for the engine, again with its chunks' columns walked by one workgroup a tile (setColumnSplits(false)). */
  longPrefill?: number;
  longPrefillWhole?: number;
  sft: number;
  /** A LoRA SFT step's wall milliseconds and the main thread's CPU milliseconds in it: the host's own part (tfjs's ops, encoding, reading back), which the GPU waits for where it is not overlapped. */
  sftHost?: { wallMs: number; mainCpuMs: number };
  /** Decoding with a LoRA adapter on all seven projections, at the smallest and largest batch (the engine's only). */
  loraDecode?: Record<string, number>;
  /** The same at the largest batch with its products in tiles (setStepProducts; the engine's only, kernels on). */
  loraDecodeTiled?: Record<string, number>;
  /** A step of ART's RL loss (its defaults) on the SFT step's tokens (the engine's only). */
  rl?: number;
  /** Decoding at the smallest batch with Dawn's polling left to spin rather than paced (the engine's only; dawn-polling.ts). */
  spinDecode?: number;
  /** LoRA SFT with every tiled product in 64 x 64 tiles, where by their sizes some take 32 or 128 (the engine's only, kernels on). */
  sftTiles64?: number;
  /** LoRA SFT with the tiled products on tensor cores, where the device has them (the engine's only, kernels on). */
  sftTensorCores?: number;
  /** LoRA SFT with the f32 tiles loading each step's operands a step ahead (setProductPrefetch; the engine's only, kernels on). */
  sftPrefetch?: number;
  /** LoRA SFT with the products' inner dimension split among workgroups where their grid is short of work (setProductSplits; the engine's only, kernels on). */
  sftSplit?: number;
  /** For a 16-bit checkpoint, which the engine holds in 16 bits on webgpu: decoding on an f32 copy (gpuWeights 'f32'), at the smallest and largest batch (the engine's only). */
  f32Decode?: Record<string, number>;
  /** The GPU time table of profile(), where there is one. */
  profile?: string | null;
  /** The first logits of the prefill prompt's last position: both sides must compute the same model. */
  logits: number[];
}

const LOGITS_COMPARED = 16;

const FULL: Plan = { prefillTokens: 512, decodeBatches: [1, 32, 128], decodePrompt: 16, decodeSteps: 8, longContext: 4096, trainRows: 4, trainTokens: 256, trainSteps: 2 };
const SMOKE: Plan = { prefillTokens: 64, decodeBatches: [1, 4, 64], decodePrompt: 4, decodeSteps: 2, longContext: 600, trainRows: 2, trainTokens: 16, trainSteps: 1 };

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** Token ids from a fixed sequence: the same prompts for every backend and for the peer. */
function tokens(count: number, seed: number, vocab: number): number[] {
  return Array.from({ length: count }, (_, i) => 3 + ((seed * 7919 + i * 104729) % (vocab - 3)));
}

async function seconds(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

/** A prompt prefilled as the service does it (DecodeBatch.join): its logits read back, and what a prefill costs the host (Figures.prefillHost). */
async function prefill(lm: LoadedModel, plan: Plan): Promise<{ rate: number; logits: number[]; host: NonNullable<Figures['prefillHost']> }> {
  const prompt = tokens(plan.prefillTokens, 1, lm.config.vocabSize);
  let values: Float32Array = new Float32Array(0);
  const once = async () => {
    const batch = new DecodeBatch<number>(lm.model);
    values = await batch.join(0, prompt);
    batch.dispose();
  };
  await once(); // compiles the shaders of these shapes
  const cpu = process.threadCpuUsage();
  const times = [await seconds(once), await seconds(once)];
  const used = process.threadCpuUsage(cpu);
  const host = { wallMs: (1000 * (times[0] + times[1])) / 2, mainCpuMs: (used.user + used.system) / 1000 / 2 };
  return { rate: plan.prefillTokens / Math.min(...times), logits: Array.from(values.slice(0, LOGITS_COMPARED)), host };
}

/** Steps a run of the "in runs" decode rows takes: the inference worker's DECODE_RUN_STEPS default. */
const RUN_STEPS = 4;

/**
 * How the decode rows take a step's tokens: drawn on the GPU in runs of `runSteps` steps, a
 * readback after each run (DecodeBatch.stepsDrawn), with `ahead` each run after the first
 * submitted before the one before it is read back (stepsDrawnAfter); or with the first
 * `logitRows` rows' logits read back, their tokens taken on the host, and the others drawn
 * (stepMixed), as a batch does where some request asks for top-k, top-p or top logprobs.
 */
type DecodeHow = { runSteps: number; ahead?: boolean } | { logitRows: number };

/** Decode tokens/s (aggregate) of a batch of `size` rows, greedy: plan.decodeSteps steps, taken as `how` says. */
async function decode(lm: LoadedModel, plan: Plan, size: number, how: DecodeHow = { runSteps: 1 }): Promise<number> {
  const V = lm.config.vocabSize;
  const batch = new DecodeBatch<number>(lm.model);
  try {
    const next = new Map<number, number>();
    for (let i = 0; i < size; i++) next.set(i, argmax(await batch.join(i, tokens(plan.decodePrompt, 10 + i, V))));
    const greedy = new Map<number, RowDraw>(Array.from({ length: size }, (_, i) => [i, { temperature: 0, u: 0 }]));
    const runSteps = 'runSteps' in how ? how.runSteps : 1;
    const drawn = 'logitRows' in how ? new Map([...greedy].filter(([i]) => i >= how.logitRows)) : greedy;
    const run = async () => {
      if ('logitRows' in how) {
        for (const [i, value] of await batch.stepMixed(next, drawn)) next.set(i, value instanceof Float32Array ? argmax(value) : value.id);
        return;
      }
      const steps = await batch.stepsDrawn(next, Array.from({ length: runSteps }, () => greedy));
      for (const [i, token] of steps[steps.length - 1]) next.set(i, token.id);
    };
    await run();
    await run();
    const runs = Math.ceil(plan.decodeSteps / runSteps);
    const ahead = async () => {
      const draws = Array.from({ length: runSteps }, () => greedy);
      let pending = batch.stepsDrawn(next, draws);
      for (let r = 1; r < runs; r++) {
        const following = batch.stepsDrawnAfter(draws);
        await pending;
        pending = following;
      }
      const steps = await pending;
      for (const [i, token] of steps[steps.length - 1]) next.set(i, token.id);
    };
    const time = await seconds(async () => {
      if ('ahead' in how && how.ahead) await ahead();
      else for (let r = 0; r < runs; r++) await run();
    });
    return (size * runs * runSteps) / time;
  } finally {
    batch.dispose();
  }
}

/** TrainerOptions.keptProductsBytes of the measured training steps (--kept-mb). */
function keptProductsBytes(): number | undefined {
  const mb = option('--kept-mb') ?? (tf.getBackend() === 'webgpu' ? '16384' : undefined);
  return mb === undefined ? undefined : Number(mb) * 2 ** 20;
}

/** The trainer every measured training step runs on: LoRA on DEFAULT_LORA_SPEC, the step's rows in one micro-batch. */
function benchTrainer(lm: LoadedModel, plan: Plan): LoraTrainer {
  return new LoraTrainer(lm, DEFAULT_LORA_SPEC, undefined, { seed: 1, microBatchTokens: plan.trainRows * plan.trainTokens, keptProductsBytes: keptProductsBytes() });
}

/** A training step's rows: plan.trainRows sequences of plan.trainTokens tokens, the first 8 of each without loss. */
function trainingRows(lm: LoadedModel, plan: Plan): { tokens: number[]; mask: number[] }[] {
  return Array.from({ length: plan.trainRows }, (_, r) => {
    const ids = tokens(plan.trainTokens, 100 + r, lm.config.vocabSize);
    return { tokens: ids, mask: ids.map((_, i) => (i < 8 ? 0 : 1)) };
  });
}

/**
 * Whether some tiled product of a training step takes other tiles than 64 x 64 by its size
 * (productTiling with the tiles left to it, the engine's kernels on webgpu, no tensor cores):
 * the frozen products forward [rows, out] and their input gradients [rows, in].
 */
function takesOtherTiles(config: ModelConfig, plan: Plan): boolean {
  if (tf.getBackend() !== 'webgpu' || !fusedKernelsEnabled() || process.argv.includes('--tiles')) return false;
  const { hiddenSize: C, intermediateSize: I, numHeads: H, numKvHeads: KV, headDim: D } = config;
  const widths = [(H + 2 * KV) * D, H * D, C, 2 * I, I];
  return widths.some((n) => productTiling(plan.trainRows * plan.trainTokens, n).tile !== 64);
}

/** LoRA SFT tokens/s over plan.trainSteps steps after one untimed step, and what a step costs the host (Figures.sftHost). */
async function sft(lm: LoadedModel, plan: Plan): Promise<{ rate: number; host: NonNullable<Figures['sftHost']> }> {
  const trainer = benchTrainer(lm, plan);
  try {
    const rows = trainingRows(lm, plan);
    await trainer.sftStepOnTokens(rows, 1e-4);
    const cpu = process.threadCpuUsage();
    const time = await seconds(async () => {
      for (let s = 0; s < plan.trainSteps; s++) await trainer.sftStepOnTokens(rows, 1e-4);
    });
    const used = process.threadCpuUsage(cpu);
    const host = { wallMs: (1000 * time) / plan.trainSteps, mainCpuMs: (used.user + used.system) / 1000 / plan.trainSteps };
    return { rate: (plan.trainRows * plan.trainTokens * plan.trainSteps) / time, host };
  } finally {
    trainer.dispose();
  }
}

/** LoRA weights of DEFAULT_LORA_SPEC with B as well as A random (PEFT's B = 0 would decode as the base model). */
function randomLoraWeights(config: ModelConfig): AdapterTensors {
  const tensors = initLoraWeights(config, DEFAULT_LORA_SPEC, 1);
  for (const [name, t] of tensors) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.01 * Math.sin(i + name.length)));
  return tensors;
}

/**
 * One step of ART's RL loss (validateExperimentalConfig's defaults: importance sampling against
 * the sampled logprobs) on the SFT step's rows, half with advantage 1 and half -1, timed after
 * one untimed step: tokens/s.
 */
async function rlStep(lm: LoadedModel, plan: Plan): Promise<number> {
  const trainer = benchTrainer(lm, plan);
  try {
    const rl = rlPlanOf(trainingRows(lm, plan));
    await trainer.trainRl(rl, ART_RL_DEFAULTS);
    const time = await seconds(async () => {
      for (let s = 0; s < plan.trainSteps; s++) await trainer.trainRl(rl, ART_RL_DEFAULTS);
    });
    return (plan.trainRows * plan.trainTokens * plan.trainSteps) / time;
  } finally {
    trainer.dispose();
  }
}

/** Progress on stderr, so that a run cut short still shows how far it got. */
const progress = (what: string) => process.stderr.write(`  ${new Date().toISOString().slice(11, 19)} ${what}\n`);

/** Decoding at the smallest and largest batch with a 16-bit checkpoint's weights held as an f32 copy (gpuWeights 'f32'), the other rows' 16 bits' counterpart. */
async function f32Decode(dir: string, plan: Plan): Promise<Record<string, number>> {
  progress('loading the model for inference only, its weights in f32');
  const served = await loadModel(dir, { inferenceOnly: true, gpuWeights: 'f32' });
  try {
    const figures: Record<string, number> = {};
    for (const size of [plan.decodeBatches[0], plan.decodeBatches[plan.decodeBatches.length - 1]]) {
      progress(`decode, weights in f32, batch ${size}`);
      figures[size] = await decode(served, plan, size);
    }
    return figures;
  } finally {
    served.dispose();
  }
}

async function measure(dir: string, plan: Plan, f32Copy: boolean): Promise<Figures> {
  const figures = await measureLoaded(dir, plan);
  if (f32Copy) figures.f32Decode = await f32Decode(dir, plan);
  return figures;
}

async function measureLoaded(dir: string, plan: Plan): Promise<Figures> {
  progress('loading the model');
  const lm = await loadModel(dir);
  try {
    progress('prefill');
    const { rate, logits, host } = await prefill(lm, plan);
    const figures: Figures = { prefill: rate, prefillHost: host, decode: {}, sft: 0, logits };
    if (tf.getBackend() === 'webgpu' && fusedKernelsEnabled()) {
      progress("prefill, the prompt's products in tiles");
      setStepProducts('tiled');
      figures.prefillTiled = await prefill(lm, plan).finally(() => setStepProducts('split'));
      if (tensorCores) {
        progress("prefill, the prompt's products on tensor cores");
        useSubgroupMatrices(tensorCores);
        figures.prefillTensorCores = await prefill(lm, plan).finally(() => useSubgroupMatrices(null));
      }
    }
    for (const size of plan.decodeBatches) {
      progress(`decode, batch ${size}`);
      figures.decode[size] = await decode(lm, plan, size);
    }
    if (tf.getBackend() === 'webgpu' && fusedKernelsEnabled()) {
      figures.decodeRuns = {};
      for (const size of [plan.decodeBatches[0], plan.decodeBatches[plan.decodeBatches.length - 1]]) {
        progress(`decode, batch ${size}, in runs of ${RUN_STEPS} steps fed on the GPU`);
        figures.decodeRuns[size] = await decode(lm, plan, size, { runSteps: RUN_STEPS });
      }
      figures.decodeRunsAhead = {};
      for (const size of [plan.decodeBatches[0], plan.decodeBatches[plan.decodeBatches.length - 1]]) {
        progress(`decode, batch ${size}, in runs of ${RUN_STEPS} steps, each submitted before the last is read`);
        figures.decodeRunsAhead[size] = await decode(lm, plan, size, { runSteps: RUN_STEPS, ahead: true });
      }
    }
    if (tf.getBackend() === 'webgpu' && fusedKernelsEnabled()) {
      const largest = plan.decodeBatches[plan.decodeBatches.length - 1];
      progress(`decode, batch ${largest}, one row's logits read back`);
      figures.decodeOneLogitRow = { [largest]: await decode(lm, plan, largest, { logitRows: 1 }) };
      progress(`decode, batch ${largest}, every row's logits read back`);
      figures.decodeAllLogits = { [largest]: await decode(lm, plan, largest, { logitRows: largest }) };
    }
    const tileable = plan.decodeBatches.filter((size) => size >= TILED_TOKENS);
    if (tf.getBackend() === 'webgpu' && fusedKernelsEnabled() && tileable.length > 0) {
      figures.decodeTiled = {};
      for (const size of tileable) {
        progress(`decode, batch ${size}, products in tiles`);
        setStepProducts('tiled');
        figures.decodeTiled[size] = await decode(lm, plan, size).finally(() => setStepProducts('split'));
      }
      if (tensorCores) {
        figures.decodeTensorCores = {};
        for (const size of tileable) {
          progress(`decode, batch ${size}, products on tensor cores`);
          useSubgroupMatrices(tensorCores);
          figures.decodeTensorCores[size] = await decode(lm, plan, size).finally(() => useSubgroupMatrices(null));
        }
      }
    }
    progress(`prefill, ${plan.longContext}-token prompt`);
    const long: Plan = { ...plan, prefillTokens: plan.longContext, decodePrompt: plan.longContext };
    figures.longPrefill = (await prefill(lm, long)).rate;
    progress(`decode, batch 1, ${plan.longContext}-token prompt`);
    figures.longDecode = await decode(lm, long, 1);
    if (tf.getBackend() === 'webgpu' && fusedKernelsEnabled()) {
      setColumnSplits(false);
      try {
        progress(`prefill, ${plan.longContext}-token prompt, its chunks' columns in one workgroup a tile`);
        figures.longPrefillWhole = (await prefill(lm, long)).rate;
        progress(`decode, batch 1, ${plan.longContext}-token prompt, its columns in one workgroup`);
        figures.longDecodeWhole = await decode(lm, long, 1);
      } finally {
        setColumnSplits(true);
      }
    }
    if (tf.getBackend() === 'webgpu') {
      progress(`decode, batch ${plan.decodeBatches[0]}, Dawn's polling left to spin`);
      setDawnPolling('spin');
      figures.spinDecode = await decode(lm, plan, plan.decodeBatches[0]).finally(() => setDawnPolling('paced'));
    }
    progress('LoRA SFT');
    const trained = await sft(lm, plan);
    figures.sft = trained.rate;
    figures.sftHost = trained.host;
    if (takesOtherTiles(lm.config, plan)) {
      progress('LoRA SFT, every product in 64 x 64 tiles');
      setProductTiles(64);
      figures.sftTiles64 = (await sft(lm, plan).finally(() => setProductTiles('auto'))).rate;
    }
    if (fusedKernelsEnabled()) {
      progress('LoRA SFT, products prefetched');
      setProductPrefetch(true);
      figures.sftPrefetch = (await sft(lm, plan).finally(() => setProductPrefetch(false))).rate;
      progress('LoRA SFT, products split along their inner dimension');
      setProductSplits(true);
      figures.sftSplit = (await sft(lm, plan).finally(() => setProductSplits(false))).rate;
    }
    if (tensorCores && fusedKernelsEnabled()) {
      progress('LoRA SFT, products on tensor cores');
      useSubgroupMatrices(tensorCores);
      figures.sftTensorCores = (await sft(lm, plan).finally(() => useSubgroupMatrices(null))).rate;
    }
    progress('RL step');
    figures.rl = await rlStep(lm, plan);
    figures.loraDecode = {};
    const adapter = applyAdapter(lm, { spec: DEFAULT_LORA_SPEC, tensors: randomLoraWeights(lm.config) });
    try {
      for (const size of [plan.decodeBatches[0], plan.decodeBatches[plan.decodeBatches.length - 1]]) {
        progress(`decode with a LoRA adapter, batch ${size}`);
        figures.loraDecode[size] = await decode(lm, plan, size);
      }
      const largest = plan.decodeBatches[plan.decodeBatches.length - 1];
      if (tf.getBackend() === 'webgpu' && fusedKernelsEnabled() && largest >= TILED_TOKENS) {
        progress(`decode with a LoRA adapter, batch ${largest}, products in tiles`);
        setStepProducts('tiled');
        figures.loraDecodeTiled = { [largest]: await decode(lm, plan, largest).finally(() => setStepProducts('split')) };
      }
    } finally {
      adapter.dispose();
    }
    progress('GPU profile');
    figures.profile = await profile(lm, plan);
    const training = await trainingProfile(lm, plan);
    if (training) figures.profile = [figures.profile, training].filter(Boolean).join('\n\n');
    return figures;
  } finally {
    lm.dispose();
  }
}

/** PyTorch eager on the same weights (torch_peer.py), or why it did not run. */
function peer(dir: string, plan: Plan): Figures | string {
  const script = path.join(__dirname, 'torch_peer.py');
  const python = option('--python') ?? 'python3';
  const probe = spawnSync(python, ['-c', 'import torch'], { encoding: 'utf8' });
  if (probe.status !== 0) return `no PyTorch (${python} -c 'import torch' failed)`;
  const run = spawnSync(python, [script, dir, JSON.stringify(plan)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 });
  if (run.status !== 0) return `torch_peer.py exited with ${run.status}`;
  return JSON.parse(run.stdout.trim().split('\n').pop() as string) as Figures;
}

/**
 * Where the GPU time of one encoded step goes (WebGpuDecodeStep.profile: timestamp queries),
 * per kind of dispatch in microseconds: a prefill chunk of one prompt, a decoding step of each
 * batch size, and the last chunk of a plan.longContext-token prompt and a step of its row after
 * it, their attention's columns split among workgroups and walked by one. Null off webgpu or
 * where the adapter has no timestamp queries.
 */
async function profile(lm: LoadedModel, plan: Plan): Promise<string | null> {
  const step = WebGpuDecodeStep.for(lm.model);
  if (!step) return null;
  const lines: string[] = [];
  const line = (what: string, spent: Record<string, number> | null) => {
    if (!spent) return false;
    const total = Object.values(spent).reduce((a, b) => a + b, 0);
    lines.push(`| ${what} | ${Math.round(total)} | ${Object.entries(spent).map(([k, v]) => `${k} ${Math.round(v)}`).join(', ')} |`);
    return true;
  };
  // The model's step (it goes with the model).
  const chunk = Math.min(plan.prefillTokens, 256);
  const cache = lm.model.newCache();
  cache.addEmptyRow();
  const prefilled = line(`prefill, ${chunk} tokens`, await step.profile(cache, [tokens(chunk, 1, lm.config.vocabSize)]));
  cache.dispose();
  if (!prefilled) return null;
  for (const size of plan.decodeBatches) {
    const rows = lm.model.newCache();
    for (let i = 0; i < size; i++) rows.addEmptyRow();
    step.advance(rows, Array.from({ length: size }, (_, i) => tokens(plan.decodePrompt, 10 + i, lm.config.vocabSize)));
    const next = Array.from({ length: size }, (_, i) => [3 + i]);
    await step.profile(rows, next); // compiles this size's pipelines
    line(`decode, batch ${size}`, await step.profile(rows, next));
    rows.dispose();
  }
  // A long prompt's last chunk (the ones before it prefilled as DecodeBatch.join does), then one row decoding after it: their attention's columns split and not.
  const prompt = tokens(plan.longContext, 10, lm.config.vocabSize);
  const lastChunk = Math.floor((prompt.length - 1) / chunk) * chunk;
  try {
    for (const split of [true, false]) {
      setColumnSplits(split);
      const long = lm.model.newCache();
      long.addEmptyRow();
      try {
        for (let at = 0; at < lastChunk; at += chunk) step.advance(long, [prompt.slice(at, at + chunk)]);
        line(`prefill, the last ${prompt.length - lastChunk} tokens of a ${plan.longContext}-token prompt${split ? '' : ', its columns in one workgroup a tile'}`, await step.profile(long, [prompt.slice(lastChunk)]));
        await step.profile(long, [[3]]); // compiles the pipelines
        line(`decode, batch 1, ${plan.longContext}-token prompt${split ? '' : ', its columns in one workgroup'}`, await step.profile(long, [[3]]));
      } finally {
        long.dispose();
      }
    }
  } finally {
    setColumnSplits(true);
  }
  return ['| GPU time of one step, µs | total | by dispatch kind |', '|---|---|---|', ...lines].join('\n');
}

/** Kernels a training step's profile names one by one; the rest are summed as "other". */
const PROFILED_KERNELS = 12;

/**
 * Where the GPU time of one LoRA SFT step goes (the measured step's sizes), per tfjs kernel in
 * milliseconds with how many times it ran: tf.profile times each kernel's programs with
 * timestamp queries, the engine's own WGSL programs too (runMultiOutputProgram), each
 * dispatch in a pass of its own. Null off webgpu or without timestamp queries.
 */
async function trainingProfile(lm: LoadedModel, plan: Plan): Promise<string | null> {
  if (tf.getBackend() !== 'webgpu') return null;
  const backend = tf.backend() as unknown as { supportTimestampQuery?: boolean };
  if (!backend.supportTimestampQuery) return null;
  const trainer = benchTrainer(lm, plan);
  try {
    const rows = trainingRows(lm, plan);
    await trainer.sftStepOnTokens(rows, 1e-4); // compiles the step's pipelines
    const info = await tf.profile(() => trainer.sftStepOnTokens(rows, 1e-4));
    const byKernel = new Map<string, { ms: number; runs: number }>();
    for (const kernel of info.kernels) {
      const entry = byKernel.get(kernel.name) ?? { ms: 0, runs: 0 };
      entry.ms += Number(kernel.kernelTimeMs) || 0;
      entry.runs++;
      byKernel.set(kernel.name, entry);
    }
    const sorted = [...byKernel.entries()].sort((a, b) => b[1].ms - a[1].ms);
    const shown = sorted.slice(0, PROFILED_KERNELS);
    const rest = sorted.slice(PROFILED_KERNELS).reduce((a, [, e]) => ({ ms: a.ms + e.ms, runs: a.runs + e.runs }), { ms: 0, runs: 0 });
    const total = sorted.reduce((a, [, e]) => a + e.ms, 0);
    const cells = [...shown.map(([name, e]) => `${name} ${e.ms.toFixed(1)} (${e.runs})`), ...(rest.runs > 0 ? [`other ${rest.ms.toFixed(1)} (${rest.runs})`] : [])];
    return ['| GPU time of one LoRA SFT step, ms | total | by kernel (runs) |', '|---|---|---|', `| ${plan.trainRows} x ${plan.trainTokens} tokens | ${total.toFixed(1)} | ${cells.join(', ')} |`].join('\n');
  } finally {
    trainer.dispose();
  }
}

/**
 * What a step costs in WebGPU work, counted (countGpuWork) on two depths of the tiny model so
 * that per-layer figures are differences, not assumptions: dispatches a layer of a decoding
 * step (base model, and with a LoRA adapter on all seven projections), queue submits of a
 * step, bytes read back a row; and of a LoRA SFT step, forward passes (Block.forward calls per
 * layer: 1 where every block runs its forward once and its explicit backward, 2 where all are
 * recomputed for their backward, training/checkpointing.ts), dispatches a layer of its forward
 * and backward, and those of its optimizer's update (AdamW.apply: a dispatch for as many
 * parameters as the device binds, the gradients' sums of squares, their total), counted apart,
 * and the step's queue submits and readbacks (of the 4-layer model), the optimizer's readbacks
 * apart, and those of a step of ART's default RL loss on the same rows; the bind groups each of those two steps makes
 * after three over the same rows, and the buffers it writes from the host (its uniforms: kept
 * by content, webgpu-bind-groups.ts and webgpu-uniforms.ts). Then the dispatches a layer of a decoding
 * step and of a LoRA SFT step in Qwen3's layout (q_norm, k_norm) and Gemma 3's (those, norms on
 * the outputs, GeGLU, sliding-window layers), at the tiny preset's size; and what a run of
 * decoding steps fed on the GPU submits and reads back (runCounts).
 */
async function gpuCounts(where: string): Promise<Record<string, number>> {
  const tiny = await familyCounts(where, 'tiny');
  // The other layouts, where the step and the training kernels take their norms and activations too.
  const families: [string, Preset][] = [
    ['qwen3', 'tiny-qwen3'],
    ['gemma3', 'tiny-gemma3'],
  ];
  const others: Record<string, number> = {};
  for (const [family, preset] of families) {
    const counted = await familyCounts(where, preset);
    others[`${family}_decode_dispatches_per_layer`] = counted.decode_dispatches_per_layer;
    others[`${family}_train_dispatches_per_layer`] = counted.train_dispatches_per_layer;
  }
  return { ...tiny, ...others, ...(await runCounts(where)) };
}

/**
 * A run of RUN_STEPS decoding steps fed on the GPU (DecodeBatch.stepsDrawn), counted on the tiny
 * preset tied (its embeddings read from the lm_head, as the families served on GPUs do): its
 * queue submits, its readbacks and the bytes they read a row.
 */
async function runCounts(where: string): Promise<Record<string, number>> {
  const dir = path.join(where, 'count-tiny-tied');
  if (!fs.existsSync(path.join(dir, 'model.safetensors'))) makeModel({ preset: 'tiny', out: dir, seed: 0, overrides: { tieWordEmbeddings: true } });
  const lm = await loadModel(dir);
  const batch = new DecodeBatch<number>(lm.model);
  const rows = 4;
  try {
    const next = new Map<number, number>();
    for (let i = 0; i < rows; i++) next.set(i, argmax(await batch.join(i, tokens(6, 10 + i, lm.config.vocabSize))));
    const greedy = new Map<number, RowDraw>(Array.from({ length: rows }, (_, i) => [i, { temperature: 0, u: 0 }]));
    const run = Array.from({ length: RUN_STEPS }, () => greedy);
    // The first run grows the merged cache (tfjs's work, a submit of its own).
    await batch.stepsDrawn(next, run);
    const { counts } = await countGpuWork(() => batch.stepsDrawn(next, run));
    return { decode_run_steps: RUN_STEPS, decode_run_submits: counts.submits, decode_run_readbacks: counts.reads, decode_run_readback_bytes_per_row: counts.readBytes / rows };
  } finally {
    batch.dispose();
    lm.dispose();
  }
}

/** gpuCounts' figures for one preset's layout, from a 2- and a 4-layer model. */
async function familyCounts(where: string, preset: Preset): Promise<Record<string, number>> {
  const measured: { layers: number; base: GpuCounts; lora: GpuCounts; train: GpuCounts; optimizer: GpuCounts; rl: GpuCounts; forwardPasses: number }[] = [];
  for (const layers of [2, 4]) {
    const dir = path.join(where, `count-${preset}-${layers}`);
    if (!fs.existsSync(path.join(dir, 'model.safetensors'))) makeModel({ preset, out: dir, seed: 0, overrides: { numLayers: layers } });
    const lm = await loadModel(dir);
    const rows = 4;
    const decodeStep = async () => {
      const batch = new DecodeBatch<number>(lm.model);
      try {
        const next = new Map<number, number>();
        for (let i = 0; i < rows; i++) next.set(i, argmax(await batch.join(i, tokens(6, 10 + i, lm.config.vocabSize))));
        const greedy = new Map<number, RowDraw>(Array.from({ length: rows }, (_, i) => [i, { temperature: 0, u: 0 }]));
        await batch.stepDrawn(next, greedy);
        return (await countGpuWork(() => batch.stepDrawn(next, greedy))).counts;
      } finally {
        batch.dispose();
      }
    };
    const base = await decodeStep();
    const adapter = applyAdapter(lm, { spec: DEFAULT_LORA_SPEC, tensors: initLoraWeights(lm.config, DEFAULT_LORA_SPEC, 1) });
    const lora = await decodeStep();
    adapter.dispose();
    const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC, undefined, { seed: 1, microBatchTokens: 2 * 32 });
    const rowsOfTokens = [0, 1].map((r) => ({ tokens: tokens(32, 100 + r, lm.config.vocabSize), mask: new Array(32).fill(1) }));
    // Three steps uncounted: the first makes the step's pipelines and buffers, and by the fourth the
    // pool hands them out in the order it keeps (webgpu-buffer-pool.ts), as every step after.
    for (let s = 0; s < 3; s++) await trainer.sftStepOnTokens(rowsOfTokens, 1e-4);
    let blockPasses = 0;
    const forward = Block.prototype.forward;
    Block.prototype.forward = function (this: Block, ...args: Parameters<Block['forward']>) {
      blockPasses++;
      return forward.apply(this, args);
    };
    // The optimizer's work counted inside the step's (countGpuWork's wrappers nest: both count it).
    const apply = AdamW.prototype.apply;
    let optimizer = noGpuWork();
    AdamW.prototype.apply = async function (this: AdamW, ...args: Parameters<AdamW['apply']>) {
      const { result, counts } = await countGpuWork(() => apply.apply(this, args));
      optimizer = counts;
      return result;
    };
    const train = await countGpuWork(() => trainer.sftStepOnTokens(rowsOfTokens, 1e-4)).finally(() => {
      Block.prototype.forward = forward;
      AdamW.prototype.apply = apply;
    });
    // A step of ART's default RL loss on the same rows, after three uncounted.
    const rl = rlPlanOf(rowsOfTokens);
    for (let s = 0; s < 3; s++) await trainer.trainRl(rl, ART_RL_DEFAULTS);
    const rlStep = await countGpuWork(() => trainer.trainRl(rl, ART_RL_DEFAULTS));
    trainer.dispose();
    lm.dispose();
    measured.push({ layers, base, lora, train: train.counts, optimizer, rl: rlStep.counts, forwardPasses: blockPasses / layers });
  }
  const [a, b] = measured;
  const perLayer = (get: (m: (typeof measured)[number]) => number) => (get(b) - get(a)) / (b.layers - a.layers);
  return {
    decode_dispatches_per_layer: perLayer((m) => m.base.dispatches),
    decode_lora_dispatches_per_layer: perLayer((m) => m.lora.dispatches),
    decode_submits_per_step: b.base.submits,
    decode_readback_bytes_per_row: b.base.readBytes / 4,
    decode_lora_readback_bytes_per_row: b.lora.readBytes / 4,
    train_forward_passes: b.forwardPasses,
    train_dispatches_per_layer: perLayer((m) => m.train.dispatches - m.optimizer.dispatches),
    train_optimizer_dispatches_per_layer: perLayer((m) => m.optimizer.dispatches),
    // The embeddings read on the GPU, the final norm both ways, the lm_head's chunk (one here), the loss and the
    // optimizer's dispatches beside its per-layer ones.
    train_dispatches_outside_layers: b.train.dispatches - b.layers * perLayer((m) => m.train.dispatches),
    train_submits_per_step: b.train.submits,
    rl_submits_per_step: b.rl.submits,
    train_readbacks_per_step: b.train.reads,
    train_optimizer_readbacks_per_step: b.optimizer.reads,
    rl_readbacks_per_step: b.rl.reads,
    train_bind_groups_per_step: b.train.bindGroups,
    rl_bind_groups_per_step: b.rl.bindGroups,
    train_uniform_writes_per_step: b.train.writes,
    rl_uniform_writes_per_step: b.rl.writes,
  };
}

const round = (x: number) => (x >= 100 ? Math.round(x).toString() : x.toPrecision(3));

/** One engine measurement: a label for its column and its figures. */
interface Run {
  label: string;
  figures: Figures;
}

function table(name: string, plan: Plan, runs: Run[], theirs: Figures | string): string {
  const peerName = typeof theirs === 'string' ? 'PyTorch eager' : `PyTorch eager (${(theirs as Figures & { device?: string }).device ?? ''})`;
  // A figure one side does not measure (the peer's LoRA decode and RL step) is a dash.
  const shown = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '-' : round(x));
  const cell = (get: (f: Figures) => number | undefined) => (typeof theirs === 'string' ? '-' : shown(get(theirs)));
  const row = (what: string, get: (f: Figures) => number | undefined) => [what, ...runs.map((r) => shown(get(r.figures))), cell(get)];
  const loraBatches = Object.keys(runs[0]?.figures.loraDecode ?? {});
  const f32Batches = Object.keys(runs[0]?.figures.f32Decode ?? {});
  const rows = [
    row(`prefill, ${plan.prefillTokens}-token prompt`, (f) => f.prefill),
    ...(runs.some((r) => r.figures.prefillTiled) ? [row("prefill, the prompt's products in tiles", (f) => f.prefillTiled?.rate)] : []),
    ...(runs.some((r) => r.figures.prefillTensorCores) ? [row("prefill, the prompt's products on tensor cores (f16 operands)", (f) => f.prefillTensorCores?.rate)] : []),
    ...plan.decodeBatches.map((b) => row(`decode, batch ${b} (aggregate)`, (f) => f.decode[b])),
    ...Object.keys(runs[0]?.figures.decodeRuns ?? {}).map((b) => row(`decode, batch ${b}, in runs of ${RUN_STEPS} steps fed on the GPU (aggregate)`, (f) => f.decodeRuns?.[b])),
    ...Object.keys(runs[0]?.figures.decodeRunsAhead ?? {}).map((b) => row(`decode, batch ${b}, in runs of ${RUN_STEPS}, each submitted before the last is read (aggregate)`, (f) => f.decodeRunsAhead?.[b])),
    ...Object.keys(runs[0]?.figures.decodeOneLogitRow ?? {}).map((b) => row(`decode, batch ${b}, one row's logits read back (aggregate)`, (f) => f.decodeOneLogitRow?.[b])),
    ...Object.keys(runs[0]?.figures.decodeAllLogits ?? {}).map((b) => row(`decode, batch ${b}, every row's logits read back (aggregate)`, (f) => f.decodeAllLogits?.[b])),
    ...Object.keys(runs[0]?.figures.decodeTiled ?? {}).map((b) => row(`decode, batch ${b}, products in tiles (aggregate)`, (f) => f.decodeTiled?.[b])),
    ...Object.keys(runs[0]?.figures.decodeTensorCores ?? {}).map((b) => row(`decode, batch ${b}, products on tensor cores (f16 operands)`, (f) => f.decodeTensorCores?.[b])),
    row(`prefill, ${plan.longContext}-token prompt`, (f) => f.longPrefill),
    ...(runs.some((r) => r.figures.longPrefillWhole) ? [row(`prefill, ${plan.longContext}-token prompt, its chunks' columns in one workgroup a tile`, (f) => f.longPrefillWhole)] : []),
    row(`decode, batch 1, ${plan.longContext}-token prompt`, (f) => f.longDecode),
    ...(runs.some((r) => r.figures.longDecodeWhole) ? [row(`decode, batch 1, ${plan.longContext}-token prompt, its columns in one workgroup`, (f) => f.longDecodeWhole)] : []),
    row(`decode, batch ${plan.decodeBatches[0]}, Dawn's polling left to spin`, (f) => f.spinDecode),
    ...loraBatches.map((b) => row(`decode with a LoRA adapter, batch ${b} (aggregate)`, (f) => f.loraDecode?.[b])),
    ...Object.keys(runs[0]?.figures.loraDecodeTiled ?? {}).map((b) => row(`decode with a LoRA adapter, batch ${b}, products in tiles (aggregate)`, (f) => f.loraDecodeTiled?.[b])),
    ...f32Batches.map((b) => row(`decode, weights held in f32, batch ${b} (aggregate)`, (f) => f.f32Decode?.[b])),
    row(`LoRA SFT, ${plan.trainRows} x ${plan.trainTokens} tokens per step`, (f) => f.sft),
    ...(runs.some((r) => r.figures.sftTiles64) ? [row('LoRA SFT, every product in 64 x 64 tiles', (f) => f.sftTiles64)] : []),
    ...(runs.some((r) => r.figures.sftTensorCores) ? [row('LoRA SFT, tiled products on tensor cores (f16 operands)', (f) => f.sftTensorCores)] : []),
    ...(runs.some((r) => r.figures.sftPrefetch) ? [row("LoRA SFT, the f32 tiles' operands loaded a step ahead", (f) => f.sftPrefetch)] : []),
    ...(runs.some((r) => r.figures.sftSplit) ? [row("LoRA SFT, the products' inner dimension split among workgroups", (f) => f.sftSplit)] : []),
    row(`RL step (ART's default loss), ${plan.trainRows} x ${plan.trainTokens} tokens`, (f) => f.rl),
  ];
  const lines = [
    `### ${name}`,
    '',
    `| tokens/s | ${runs.map((r) => `engine (${r.label})`).join(' | ')} | ${peerName} |`,
    `|---|${runs.map(() => '---|').join('')}---|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
  const differs = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]))).toExponential(1);
  const [first] = runs;
  if (typeof theirs === 'string') lines.push('', `PyTorch: ${theirs}.`);
  else lines.push('', `Same model on both sides: the first ${LOGITS_COMPARED} logits of the prompt's last position differ by at most ${differs(first.figures.logits, theirs.logits)}.`);
  for (const other of runs.slice(1)) lines.push(`${other.label} against ${first.label}: those logits differ by at most ${differs(other.figures.logits, first.figures.logits)}.`);
  for (const { label, figures } of runs) {
    for (const [what, run] of [['in tiles', figures.prefillTiled], ['on tensor cores', figures.prefillTensorCores]] as const) {
      if (run) lines.push(`${label}, the prompt's products ${what}: those logits differ from its split products' by at most ${differs(run.logits, figures.logits)}.`);
    }
  }
  for (const { label, figures } of runs) {
    const prefilled = figures.prefillHost;
    if (prefilled) lines.push(`${label}: a ${plan.prefillTokens}-token prefill took ${prefilled.wallMs.toFixed(0)} ms, ${prefilled.mainCpuMs.toFixed(0)} ms of it the main thread's CPU.`);
    const host = figures.sftHost;
    if (host) lines.push(`${label}: a LoRA SFT step took ${host.wallMs.toFixed(0)} ms, ${host.mainCpuMs.toFixed(0)} ms of it the main thread's CPU (the host's own part: tfjs's ops, encoding, reading back).`);
  }
  for (const run of runs) if (run.figures.profile) lines.push('', `${run.label}:`, '', run.figures.profile);
  return lines.join('\n');
}

/**
 * What the adapter offers the products beyond core WebGPU: 16-bit arithmetic, subgroups, and
 * subgroup matrices (Dawn's experimental route to tensor cores), with each matrix configuration
 * it lists (component and result types, M x N x K).
 */
async function productFeatures(): Promise<string> {
  const offered = await adapterFeatures();
  if (!offered) return 'adapter features: no adapter';
  const wanted = ['shader-f16', 'subgroups', 'timestamp-query', 'chromium-experimental-subgroup-matrix'];
  const has = wanted.map((f) => `${f} ${offered.features.includes(f) ? 'yes' : 'no'}`).join(', ');
  const configs = offered.subgroupMatrixConfigs.map((c) => `${c.componentType} -> ${c.resultComponentType} ${c.M}x${c.N}x${c.K}`);
  // The engine's device binds as many storage buffers a program as the adapter offers (registerWebGpuDevice): the optimizer's and some training programs' dispatch counts follow it.
  return `adapter features: ${has}; subgroup matrices: ${configs.length > 0 ? configs.join(', ') : 'none'}; storage buffers a program: ${storageBufferLimit()}\n`;
}

/** The subgroup matrices the device offered and checked (backend.ts), for the tensor cores' row; null where none. */
let tensorCores: SubgroupMatrices | null = null;

/** Which settings of webgpu's fused kernels to measure, in order. */
function kernelSettings(backend: BackendName): boolean[] {
  if (backend !== 'webgpu') return [false];
  const choice = option('--kernels') ?? process.env['WEBGPU_FUSED_KERNELS'] ?? 'both';
  if (!['on', 'off', 'both'].includes(choice)) throw new Error(`--kernels ${choice}: on, off or both`);
  return choice === 'both' ? [true, false] : [choice === 'on'];
}

/** The shape's model directory under `where`, made (random weights) unless it is there. */
function modelDir(shape: BenchShape, where: string): string {
  const dir = path.join(where, shape.name);
  if (!fs.existsSync(path.join(dir, 'model.safetensors'))) {
    progress(`${shape.name}: making the model (random weights) in ${dir}`);
    makeModel({ preset: shape.preset, out: dir, seed: 0, overrides: shape.overrides, dtype: shape.dtype });
  }
  return dir;
}

async function main(): Promise<void> {
  const smoke = process.argv.includes('--smoke');
  const plan = smoke ? SMOKE : FULL;
  const where = option('--models') ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gpu-bench-'));
  const named = option('--only')?.split(',');
  const shapes = benchShapes(smoke, named);
  if (process.argv.includes('--make')) {
    for (const shape of shapes) modelDir(shape, where);
    return;
  }
  const preference = (option('--backend') ?? 'webgpu') as BackendName;
  // The device takes tensor cores where the adapter offers them; every row but their own runs without.
  setTensorCores(true);
  const backend = await selectBackend(preference);
  tensorCores = backend.tensorCores;
  useSubgroupMatrices(null);
  const adapter = backend.adapter ? `${backend.adapter.vendor} ${backend.adapter.architecture} (${backend.adapter.description || backend.adapter.device})${backend.adapter.fallback ? ', fallback adapter' : ''}` : 'none';
  console.log(`backend: ${backend.name}, gpu: ${backend.gpu}, adapter: ${adapter}`);
  if (backend.name === 'webgpu') console.log(await productFeatures());
  for (const note of backend.notes) console.log(note);
  if (tensorCores) console.log(`tensor cores: subgroup matrices ${tensorCores.M}x${tensorCores.N}x${tensorCores.K}, subgroups of ${tensorCores.subgroupSize}, agreeing with the f32 tiles\n`);
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${new Date().toISOString()}\n`);
  const perSubmit = option('--dispatches-per-submit');
  if (perSubmit !== undefined) {
    setDispatchesPerSubmit(Number(perSubmit));
    console.log(`a queue submit every ${perSubmit} dispatches (--dispatches-per-submit)\n`);
  }
  if (process.argv.includes('--count')) {
    console.log(JSON.stringify({ gpu_counts: await gpuCounts(where) }));
    if (smoke) return;
  }
  const tiles = option('--tiles') ?? 'auto';
  if (!['auto', ...PRODUCT_TILES.map(String)].includes(tiles)) throw new Error(`--tiles ${tiles}: auto, ${PRODUCT_TILES.join(' or ')}`);
  setProductTiles(tiles === 'auto' ? 'auto' : (Number(tiles) as ProductTile));
  if (tiles !== 'auto') console.log(`every tiled product in ${tiles} x ${tiles} tiles (--tiles)\n`);
  const budget = Number(option('--budget') ?? 270);
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  for (const shape of shapes) {
    const dir = modelDir(shape, where);
    // The first pass, then the peer, then a further pass (generic ops) if it fits in the time
    // budget, judged by how long the first one took.
    const [first, ...more] = kernelSettings(backend.name);
    const label = (fused: boolean) => (backend.name === 'webgpu' ? `webgpu, ${fused ? 'engine kernels' : 'generic ops'}` : backend.name);
    const pass = async (fused: boolean): Promise<Run> => {
      setFusedKernels(fused);
      progress(`engine, ${label(fused)}`);
      // With --f32-copy, a 16-bit checkpoint (held in 16 bits on webgpu) is also decoded on an f32 copy, with the engine's kernels.
      const copy = process.argv.includes('--f32-copy') && fused && backend.name === 'webgpu' && (shape.dtype ?? 'F32') !== 'F32';
      return { label: label(fused), figures: await measure(dir, plan, copy) };
    };
    const passStarted = elapsed();
    const runs: Run[] = [await pass(first)];
    const passSeconds = elapsed() - passStarted;
    if (!process.argv.includes('--no-peer')) progress('PyTorch eager');
    const theirs = process.argv.includes('--no-peer') ? 'not run (--no-peer)' : peer(dir, plan);
    for (const fused of more) {
      if (elapsed() + passSeconds > budget) console.log(`${label(fused)}: not run, it would take the run past its ${budget} s budget (--budget)`);
      else runs.push(await pass(fused));
    }
    console.log(table(shape.name, plan, runs, theirs) + '\n');
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
