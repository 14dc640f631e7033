/**
 * Where one LoRA training step's time goes, by tfjs kernel (SmolLM2-135M shape, the same step
 * as train.bench.ts: LoRA r 8 on all seven projections, one 64-token sequence; or ROWS
 * sequences of TOKENS tokens, such as the default packing's 8 x 256):
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/train-profile.bench.ts   (STEPS=3 MATMUL_THREADS=1 ROWS=1 TOKENS=64 KEPT_MB=1536)
 *
 * KEPT_MB: the trainer's keptProductsBytes in MB (the projections' outputs kept for the recompute).
 * Times STEPS steps, then runs STEPS more under tf.profile and prints, per kernel name, the calls and
 * the milliseconds per step (tf.profile times each kernel call by wall clock on wasm), the sum
 * of those, and the step's wall time: the difference is JS, the tape and tfjs's bookkeeping
 * between kernels. Prints only; docs/benchmarks.md ("Training step") quotes it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { selectBackend } from '../src/backend';
import { loadModel } from '../src/loader';
import { DEFAULT_LORA_SPEC } from '../src/lora/peft';
import { makeModel } from '../src/maker/make-model';
import { LoraTrainer } from '../src/training/trainer';
import { printProfile, profileKernels } from './kernel-profile';
import { trainingSequences } from './training-sequences';

const ROOT = path.resolve(__dirname, '../../..');
const MODEL_DIR = path.join(ROOT, 'var/models/bench-smollm2-135m');
const TOKENS = Number(process.env['TOKENS'] ?? 64);
const ROWS = Number(process.env['ROWS'] ?? 1);
const STEPS = Number(process.env['STEPS'] ?? 3);
const MATMUL_THREADS = Number(process.env['MATMUL_THREADS'] ?? 1);
const KEPT_MB = Number(process.env['KEPT_MB'] ?? 1536);

async function main(): Promise<void> {
  const backend = await selectBackend('wasm');
  if (!fs.existsSync(path.join(MODEL_DIR, 'model.safetensors'))) makeModel({ preset: 'smollm2-135m', out: MODEL_DIR, seed: 0 });
  const lm = await loadModel(MODEL_DIR, { matmulThreads: MATMUL_THREADS });
  const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC, undefined, { keptProductsBytes: KEPT_MB * 2 ** 20 });
  const draw = trainingSequences(lm.config.vocabSize);
  const batch = () => Array.from({ length: ROWS }, () => draw(TOKENS, 16));
  await trainer.sftStepOnTokens(batch(), 1e-4);
  const plain: number[] = [];
  for (let i = 0; i < STEPS; i++) {
    const t0 = performance.now();
    await trainer.sftStepOnTokens(batch(), 1e-4);
    plain.push(performance.now() - t0);
  }

  const profile = await profileKernels(() => trainer.sftStepOnTokens(batch(), 1e-4), STEPS);
  trainer.dispose();
  lm.dispose();
  printProfile(profile, 'step', plain, `backend ${backend.name}, matmul threads ${MATMUL_THREADS}, ${ROWS} x ${TOKENS} tokens, ${KEPT_MB} MB of products kept`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
