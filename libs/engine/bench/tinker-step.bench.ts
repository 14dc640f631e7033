/**
 * A Tinker forward_backward + optim_step against one step of our SFT job, on the same tokens
 * (the bar: the primitives cost at most 10 % more):
 *
 *   npx tsx libs/engine/bench/tinker-step.bench.ts
 *
 * SmolLM2-135M-shaped model (random weights, f32), LoRA r 8 on all seven projections, a batch
 * of ROWS sequences of TOKENS tokens, the first CONTEXT of each without loss. The SFT step is
 * LoraTrainer.sftStepOnTokens; the primitive step is LoraTrainingClient.forwardBackward
 * (cross_entropy, weights 1 / trainable tokens on the trained positions, so the same loss) then
 * optimStep. The two alternate, ROUNDS times each; medians of wall and process CPU time are
 * printed. ENGINE_BACKEND picks the backend (default wasm).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BackendPreference, selectBackend } from '../src/backend';
import { loadModel } from '../src/loader';
import { DEFAULT_LORA_SPEC } from '../src/lora/peft';
import { makeModel } from '../src/maker/make-model';
import { LoraTrainingClient, TrainingDatum } from '../src/training/primitives';
import { LoraTrainer } from '../src/training/trainer';
import { trainingSequences } from './training-sequences';

const ROOT = path.resolve(__dirname, '../../..');
const MODEL_DIR = path.join(ROOT, 'var/models/bench-smollm2-135m');
const ROWS = Number(process.env['ROWS'] ?? 4);
const TOKENS = Number(process.env['TOKENS'] ?? 128);
const CONTEXT = 16;
const ROUNDS = Number(process.env['ROUNDS'] ?? 4);
const LR = 1e-4;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timed(fn: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const cpu = process.cpuUsage(cpu0);
  return { wall: (performance.now() - t0) / 1000, cpu: (cpu.user + cpu.system) / 1e6 };
}

async function main(): Promise<void> {
  const backend = await selectBackend((process.env['ENGINE_BACKEND'] as BackendPreference | undefined) ?? 'wasm');
  if (!fs.existsSync(path.join(MODEL_DIR, 'model.safetensors'))) {
    console.log(`making ${MODEL_DIR}`);
    makeModel({ preset: 'smollm2-135m', out: MODEL_DIR, seed: 0 });
  }
  const lm = await loadModel(MODEL_DIR);
  const draw = trainingSequences(lm.config.vocabSize);
  const batch = Array.from({ length: ROWS }, () => draw(TOKENS, CONTEXT));
  const trainable = batch.reduce((s, q) => s + q.mask.slice(1).reduce((a, b) => a + b, 0), 0);
  const data: TrainingDatum[] = batch.map((q) => ({
    inputTokens: q.tokens.slice(0, -1),
    targetTokens: q.tokens.slice(1),
    lossInputs: { weights: q.mask.slice(1).map((m) => m / trainable) },
  }));
  const adam = { learningRate: LR, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1, gradClipNorm: 0.1 };

  const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC);
  const sft = () => trainer.sftStepOnTokens(batch, LR);
  await sft(); // warm-up: weight packing, kernel setup
  trainer.attachment.detach();
  const client = new LoraTrainingClient(lm, DEFAULT_LORA_SPEC);
  const primitives = async () => {
    await client.forwardBackward(data, 'cross_entropy');
    await client.optimStep(adam);
  };
  await primitives();

  const times: Record<'sft' | 'primitives', { wall: number; cpu: number }[]> = { sft: [], primitives: [] };
  for (let round = 0; round < ROUNDS; round++) {
    trainer.attachment.reattach();
    times.sft.push(await timed(sft));
    trainer.attachment.detach();
    times.primitives.push(await timed(primitives));
  }
  const row = (name: 'sft' | 'primitives') => ({ wall: median(times[name].map((t) => t.wall)), cpu: median(times[name].map((t) => t.cpu)) });
  const [s, p] = [row('sft'), row('primitives')];
  console.log(`backend ${backend.name}; ${ROWS} x ${TOKENS} tokens, ${trainable} trained; ${ROUNDS} rounds, medians`);
  console.log(`SFT step (LoraTrainer)                   wall ${s.wall.toFixed(2)} s   cpu ${s.cpu.toFixed(2)} s`);
  console.log(`forward_backward + optim_step (Tinker)   wall ${p.wall.toFixed(2)} s   cpu ${p.cpu.toFixed(2)} s`);
  console.log(`primitives / SFT                         wall ${(p.wall / s.wall).toFixed(3)}   cpu ${(p.cpu / s.cpu).toFixed(3)}`);
  client.dispose();
  trainer.dispose();
  lm.dispose();
}

void main();
