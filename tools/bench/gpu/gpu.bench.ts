/**
 * GPU throughput of the engine on WebGPU, with PyTorch eager on the same GPU and the same
 * weights as the peer. For a SmolLM2-135M-shaped and a Qwen2.5-0.5B-shaped model (random
 * weights from the model maker, float32) it prints prefill tokens/s (one 512-token prompt),
 * decode tokens/s at batch 1, 32 and 128 (aggregate; greedy, through DecodeBatch.stepDrawn),
 * and LoRA SFT training tokens/s (r 8, alpha 16, all seven projections, AdamW, 4 sequences of
 * 256 tokens per step). On webgpu the engine is measured twice in the same run: with the
 * fused WGSL kernels (RMSNorm, RoPE, decode attention, the next token drawn on the GPU) and
 * without them (WEBGPU_FUSED_KERNELS=off: generic tfjs ops, the logits read back and the
 * token chosen in JS), the before and after of the kernels.
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
 * Options: --smoke (tiny model, short prompts, batches 1, 2 and 4); --backend NAME (default
 * webgpu; wasm or cpu to compare on a CPU); --models DIR (where the model directories are
 * made, default a temporary directory; a model already there is reused); --no-peer (skip
 * PyTorch); --python PATH (the interpreter with torch, default python3); --only NAME (one
 * model: smollm2-135m or qwen2.5-0.5b); --kernels on|off|both (webgpu's fused kernels;
 * default both, or WEBGPU_FUSED_KERNELS when it is set); --budget SECONDS (default 270: a
 * model's second engine pass, generic ops, is skipped when the run would take longer with it,
 * so that the whole run stays under 5 minutes).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BackendName, selectBackend } from '../../../libs/engine/src/backend';
import type { ModelConfig } from '../../../libs/engine/src/config';
import { DecodeBatch } from '../../../libs/engine/src/decode-batch';
import type { RowDraw } from '../../../libs/engine/src/kernels/sample';
import { setFusedKernels } from '../../../libs/engine/src/kernels/webgpu-program';
import { loadModel, LoadedModel } from '../../../libs/engine/src/loader';
import { DEFAULT_LORA_SPEC } from '../../../libs/engine/src/lora/peft';
import { makeModel, Preset } from '../../../libs/engine/src/maker/make-model';
import { argmax } from '../../../libs/engine/src/sampling';
import { LoraTrainer } from '../../../libs/engine/src/training/trainer';

/** What is measured, and how big. */
interface Plan {
  prefillTokens: number;
  decodeBatches: number[];
  /** Prompt of each decoding sequence, and the steps timed after two untimed ones. */
  decodePrompt: number;
  decodeSteps: number;
  /** SFT: sequences x tokens per step, and the steps timed after one untimed one. */
  trainRows: number;
  trainTokens: number;
  trainSteps: number;
}

interface Shape {
  name: string;
  preset: Preset;
  overrides: Partial<ModelConfig>;
}

/** Figures of one model on one backend, in tokens/s. */
interface Figures {
  prefill: number;
  decode: Record<string, number>;
  sft: number;
  /** The first logits of the prefill prompt's last position: both sides must compute the same model. */
  logits: number[];
}

const LOGITS_COMPARED = 16;

const FULL: Plan = { prefillTokens: 512, decodeBatches: [1, 32, 128], decodePrompt: 16, decodeSteps: 8, trainRows: 4, trainTokens: 256, trainSteps: 2 };
const SMOKE: Plan = { prefillTokens: 32, decodeBatches: [1, 2, 4], decodePrompt: 4, decodeSteps: 2, trainRows: 2, trainTokens: 16, trainSteps: 1 };

const SHAPES: Shape[] = [
  { name: 'smollm2-135m', preset: 'smollm2-135m', overrides: {} },
  {
    name: 'qwen2.5-0.5b',
    preset: 'smollm2-135m',
    overrides: {
      modelType: 'qwen2',
      vocabSize: 151936,
      hiddenSize: 896,
      intermediateSize: 4864,
      numLayers: 24,
      numHeads: 14,
      numKvHeads: 2,
      headDim: 64,
      rmsNormEps: 1e-6,
      ropeTheta: 1_000_000,
      maxPositionEmbeddings: 32768,
      tieWordEmbeddings: true,
    },
  },
];
const SMOKE_SHAPES: Shape[] = [
  { name: 'tiny', preset: 'tiny', overrides: {} },
  { name: 'tiny-qwen2', preset: 'tiny', overrides: { modelType: 'qwen2', tieWordEmbeddings: true } },
];

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

async function prefill(lm: LoadedModel, plan: Plan): Promise<{ rate: number; logits: number[] }> {
  const prompt = tokens(plan.prefillTokens, 1, lm.config.vocabSize);
  let values: Float32Array = new Float32Array(0);
  const once = async () => {
    const cache = lm.model.newCache();
    cache.addEmptyRow();
    const logits = lm.model.forward([prompt], { cache, lastOnly: true });
    values = (await logits.data()) as Float32Array;
    logits.dispose();
    cache.dispose();
  };
  await once(); // compiles the shaders of these shapes
  const best = Math.min(await seconds(once), await seconds(once));
  return { rate: plan.prefillTokens / best, logits: Array.from(values.slice(0, LOGITS_COMPARED)) };
}

async function decode(lm: LoadedModel, plan: Plan, size: number): Promise<number> {
  const V = lm.config.vocabSize;
  const batch = new DecodeBatch<number>(lm.model);
  try {
    const next = new Map<number, number>();
    for (let i = 0; i < size; i++) next.set(i, argmax(await batch.join(i, tokens(plan.decodePrompt, 10 + i, V))));
    const greedy = new Map<number, RowDraw>(Array.from({ length: size }, (_, i) => [i, { temperature: 0, u: 0 }]));
    const step = async () => {
      const drawn = await batch.stepDrawn(next, greedy);
      for (const [i, token] of drawn) next.set(i, token.id);
    };
    await step();
    await step();
    const time = await seconds(async () => {
      for (let s = 0; s < plan.decodeSteps; s++) await step();
    });
    return (size * plan.decodeSteps) / time;
  } finally {
    batch.dispose();
  }
}

async function sft(lm: LoadedModel, plan: Plan): Promise<number> {
  const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC, undefined, { seed: 1, microBatchTokens: plan.trainRows * plan.trainTokens });
  try {
    const rows = Array.from({ length: plan.trainRows }, (_, r) => {
      const ids = tokens(plan.trainTokens, 100 + r, lm.config.vocabSize);
      return { tokens: ids, mask: ids.map((_, i) => (i < 8 ? 0 : 1)) };
    });
    await trainer.sftStepOnTokens(rows, 1e-4);
    const time = await seconds(async () => {
      for (let s = 0; s < plan.trainSteps; s++) await trainer.sftStepOnTokens(rows, 1e-4);
    });
    return (plan.trainRows * plan.trainTokens * plan.trainSteps) / time;
  } finally {
    trainer.dispose();
  }
}

/** Progress on stderr, so that a run cut short still shows how far it got. */
const progress = (what: string) => process.stderr.write(`  ${new Date().toISOString().slice(11, 19)} ${what}\n`);

async function measure(dir: string, plan: Plan): Promise<Figures> {
  progress('loading the model');
  const lm = await loadModel(dir);
  try {
    progress('prefill');
    const { rate, logits } = await prefill(lm, plan);
    const figures: Figures = { prefill: rate, decode: {}, sft: 0, logits };
    for (const size of plan.decodeBatches) {
      progress(`decode, batch ${size}`);
      figures.decode[size] = await decode(lm, plan, size);
    }
    progress('LoRA SFT');
    figures.sft = await sft(lm, plan);
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

const round = (x: number) => (x >= 100 ? Math.round(x).toString() : x.toPrecision(3));

/** One engine measurement: a label for its column and its figures. */
interface Run {
  label: string;
  figures: Figures;
}

function table(name: string, plan: Plan, runs: Run[], theirs: Figures | string): string {
  const peerName = typeof theirs === 'string' ? 'PyTorch eager' : `PyTorch eager (${(theirs as Figures & { device?: string }).device ?? ''})`;
  const cell = (get: (f: Figures) => number) => (typeof theirs === 'string' ? '-' : round(get(theirs)));
  const row = (what: string, get: (f: Figures) => number) => [what, ...runs.map((r) => round(get(r.figures))), cell(get)];
  const rows = [
    row(`prefill, ${plan.prefillTokens}-token prompt`, (f) => f.prefill),
    ...plan.decodeBatches.map((b) => row(`decode, batch ${b} (aggregate)`, (f) => f.decode[b])),
    row(`LoRA SFT, ${plan.trainRows} x ${plan.trainTokens} tokens per step`, (f) => f.sft),
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
  return lines.join('\n');
}

/** Which settings of webgpu's fused kernels to measure, in order. */
function kernelSettings(backend: BackendName): boolean[] {
  if (backend !== 'webgpu') return [false];
  const choice = option('--kernels') ?? process.env['WEBGPU_FUSED_KERNELS'] ?? 'both';
  if (!['on', 'off', 'both'].includes(choice)) throw new Error(`--kernels ${choice}: on, off or both`);
  return choice === 'both' ? [true, false] : [choice === 'on'];
}

async function main(): Promise<void> {
  const smoke = process.argv.includes('--smoke');
  const plan = smoke ? SMOKE : FULL;
  const preference = (option('--backend') ?? 'webgpu') as BackendName;
  const backend = await selectBackend(preference);
  const where = option('--models') ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gpu-bench-'));
  const adapter = backend.adapter ? `${backend.adapter.vendor} ${backend.adapter.architecture} (${backend.adapter.description || backend.adapter.device})${backend.adapter.fallback ? ', fallback adapter' : ''}` : 'none';
  console.log(`backend: ${backend.name}, gpu: ${backend.gpu}, adapter: ${adapter}`);
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${new Date().toISOString()}\n`);
  const only = option('--only');
  const budget = Number(option('--budget') ?? 270);
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  for (const shape of (smoke ? SMOKE_SHAPES : SHAPES).filter((s) => !only || s.name === only)) {
    const dir = path.join(where, shape.name);
    if (!fs.existsSync(path.join(dir, 'model.safetensors'))) {
      progress(`${shape.name}: making the model (random weights) in ${dir}`);
      makeModel({ preset: shape.preset, out: dir, seed: 0, overrides: shape.overrides });
    }
    // The first pass, then the peer, then a further pass (generic ops) if it fits in the time
    // budget, judged by how long the first one took.
    const [first, ...more] = kernelSettings(backend.name);
    const label = (fused: boolean) => (backend.name === 'webgpu' ? `webgpu, ${fused ? 'fused kernels' : 'generic ops'}` : backend.name);
    const pass = async (fused: boolean): Promise<Run> => {
      setFusedKernels(fused);
      progress(`engine, ${label(fused)}`);
      return { label: label(fused), figures: await measure(dir, plan) };
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
