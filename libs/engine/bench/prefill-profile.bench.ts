/**
 * Where one prompt's prefill goes, by tfjs kernel (SmolLM2-135M shape, f32 weights, loaded for
 * inference as prefill.bench.ts loads it: every projection on the packed matmul kernel):
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/prefill-profile.bench.ts   (RUNS=3 MATMUL_THREADS=1 TOKENS=128)
 *
 * Times RUNS prefills of a TOKENS-token prompt into a fresh cache after two untimed ones, then
 * RUNS more under tf.profile, and prints per kernel name the calls and milliseconds per
 * prefill (kernel-profile.ts). Prints only; docs/benchmarks.md ("Prefill") quotes it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { selectBackend } from '../src/backend';
import { loadModel } from '../src/loader';
import { makeModel } from '../src/maker/make-model';
import { createRng } from '../src/sampling';
import { printProfile, profileKernels } from './kernel-profile';

const MODEL_DIR = path.resolve(__dirname, '../../../var/models/bench-smollm2-135m');
const RUNS = Number(process.env['RUNS'] ?? 3);
const MATMUL_THREADS = Number(process.env['MATMUL_THREADS'] ?? 1);
const TOKENS = Number(process.env['TOKENS'] ?? 128);

async function main(): Promise<void> {
  const backend = await selectBackend('wasm');
  if (!fs.existsSync(path.join(MODEL_DIR, 'model.safetensors'))) makeModel({ preset: 'smollm2-135m', out: MODEL_DIR, seed: 0 });
  const lm = await loadModel(MODEL_DIR, { inferenceOnly: true, matmulThreads: MATMUL_THREADS });
  const rng = createRng(0);
  const prompt = Array.from({ length: TOKENS }, () => 3 + Math.floor(rng.next() * (lm.config.vocabSize - 3)));
  const prefill = async () => {
    const cache = lm.model.newCache();
    cache.addEmptyRow();
    const logits = lm.model.forward([prompt], { cache, lastOnly: true });
    await logits.data();
    logits.dispose();
    cache.dispose();
  };
  await prefill();
  await prefill();
  const plain: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await prefill();
    plain.push(performance.now() - t0);
  }
  const profile = await profileKernels(prefill, RUNS);
  lm.dispose();
  printProfile(profile, 'prefill', plain, `backend ${backend.name}, matmul threads ${MATMUL_THREADS}, ${TOKENS}-token prompt`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
