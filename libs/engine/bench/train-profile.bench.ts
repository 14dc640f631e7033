/**
 * Where one LoRA training step's time goes, by tfjs kernel (SmolLM2-135M shape, the same step
 * as train.bench.ts: LoRA r 8 on all seven projections, one 64-token sequence):
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/train-profile.bench.ts   (STEPS=3 MATMUL_THREADS=1)
 *
 * Times STEPS steps, then runs STEPS more under tf.profile and prints, per kernel name, the calls and
 * the milliseconds per step (tf.profile times each kernel call by wall clock on wasm), the sum
 * of those, and the step's wall time: the difference is JS, the tape and tfjs's bookkeeping
 * between kernels. Prints only; docs/benchmarks.md ("Training step") quotes it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { loadModel } from '../src/loader';
import { DEFAULT_LORA_SPEC } from '../src/lora/peft';
import { makeModel } from '../src/maker/make-model';
import { LoraTrainer } from '../src/training/trainer';
import { trainingSequences } from './training-sequences';

const ROOT = path.resolve(__dirname, '../../..');
const MODEL_DIR = path.join(ROOT, 'var/models/bench-smollm2-135m');
const TOKENS = 64;
const STEPS = Number(process.env['STEPS'] ?? 3);
const MATMUL_THREADS = Number(process.env['MATMUL_THREADS'] ?? 1);

async function main(): Promise<void> {
  const backend = await selectBackend('wasm');
  if (!fs.existsSync(path.join(MODEL_DIR, 'model.safetensors'))) makeModel({ preset: 'smollm2-135m', out: MODEL_DIR, seed: 0 });
  const lm = await loadModel(MODEL_DIR, { matmulThreads: MATMUL_THREADS });
  const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC);
  const draw = trainingSequences(lm.config.vocabSize);
  const sequence = () => draw(TOKENS, 16);
  await trainer.sftStepOnTokens([sequence()], 1e-4);
  const plain: number[] = [];
  for (let i = 0; i < STEPS; i++) {
    const t0 = performance.now();
    await trainer.sftStepOnTokens([sequence()], 1e-4);
    plain.push(performance.now() - t0);
  }

  const byKernel = new Map<string, { calls: number; ms: number }>();
  let wall = 0;
  for (let i = 0; i < STEPS; i++) {
    const t0 = performance.now();
    const info = await tf.profile(() => trainer.sftStepOnTokens([sequence()], 1e-4));
    wall += performance.now() - t0;
    for (const k of info.kernels) {
      const entry = byKernel.get(label(k)) ?? { calls: 0, ms: 0 };
      entry.calls++;
      entry.ms += typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
      byKernel.set(label(k), entry);
    }
  }
  trainer.dispose();
  lm.dispose();

  const rows = [...byKernel].sort((a, b) => b[1].ms - a[1].ms);
  const kernelMs = rows.filter(([name]) => !name.startsWith('(scope)')).reduce((s, [, e]) => s + e.ms, 0) / STEPS;
  console.log(`${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}, backend ${backend.name}, matmul threads ${MATMUL_THREADS}, load average ${os.loadavg()[0].toFixed(1)}`);
  console.log(`per step without tf.profile: ${plain.map((ms) => ms.toFixed(0)).join(', ')} ms`);
  console.log(`per step: wall ${(wall / STEPS).toFixed(0)} ms (under tf.profile), kernels ${kernelMs.toFixed(0)} ms, the rest ${(wall / STEPS - kernelMs).toFixed(0)} ms`);
  console.log('kernel                                      calls/step   ms/step   share');
  for (const [name, e] of rows) {
    if (e.ms / STEPS < 1) continue;
    console.log(`${name.padEnd(44)}${String(Math.round(e.calls / STEPS)).padStart(10)}${(e.ms / STEPS).toFixed(1).padStart(10)}${((100 * e.ms) / STEPS / kernelMs).toFixed(1).padStart(7)} %`);
  }
}

/**
 * A kernel's name, the packed products told apart by their shapes (LoRA's factors have r
 * columns), and custom gradients' scopes marked: their time includes the kernels inside them,
 * which are listed too, so scopes are left out of the sum.
 */
function label(k: { name: string; inputShapes: number[][]; outputShapes: number[][] }): string {
  if (k.name === 'unnamed scope' || k.name === 'forward') return `(scope) ${k.name}`;
  if (k.name.startsWith('TrainyardPackedMatMul')) {
    const n = k.outputShapes[0]?.[1] ?? 0;
    return `${k.name} ${n <= 32 ? 'small' : 'large'}`;
  }
  if (k.name === 'BatchMatMul') {
    const [a, b] = k.inputShapes;
    const small = Math.min(...(a ?? []), ...(b ?? [])) <= 32;
    return `BatchMatMul ${small ? 'with a side of r or fewer' : 'other'}`;
  }
  return k.name;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
