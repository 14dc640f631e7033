/**
 * Prefill speed on a SmolLM2-135M-shaped model: one 128-token prompt, loaded as an inference
 * worker loads it (every projection on the packed matmul kernel), on one thread and on
 * MATMUL_THREADS threads, with the checkpoint's f32 weights and with q8 weights.
 *
 *   npx tsx libs/engine/bench/prefill.bench.ts
 *   THREADS=1,2 ROUNDS=5 npx tsx libs/engine/bench/prefill.bench.ts
 *
 * Uses the f32 model generate.bench.ts makes under var/models/. Threads are set for a whole
 * process, so every case runs in a fresh child process; the cases take turns, round after
 * round, and each child reports the best of PASSES prefills (after one warm-up). Prints the
 * median and range over the rounds, as a markdown table.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { selectBackend } from '../src/backend';
import { DecodeBatch } from '../src/decode-batch';
import { loadModel, WeightsSetting } from '../src/loader';
import { createRng } from '../src/sampling';

const MODEL_DIR = path.resolve(__dirname, '../../../var/models/bench-smollm2-135m');
const PROMPT_TOKENS = 128;
const PASSES = 3;
const ROUNDS = Number(process.env['ROUNDS'] ?? 3);
const THREADS = (process.env['THREADS'] ?? '1,2').split(',').map(Number);
const WEIGHTS: WeightsSetting[] = ['checkpoint', 'q8'];

/** Prompt tokens/s of the best of PASSES prefills, in this process. */
async function prefillRate(threads: number, weights: WeightsSetting): Promise<number> {
  await selectBackend('wasm');
  const lm = await loadModel(MODEL_DIR, { inferenceOnly: true, matmulThreads: threads, weights });
  const rng = createRng(0);
  const prompt = Array.from({ length: PROMPT_TOKENS }, () => 3 + Math.floor(rng.next() * (lm.config.vocabSize - 3)));
  let best = Infinity;
  for (let pass = 0; pass <= PASSES; pass++) {
    const batch = new DecodeBatch<number>(lm.model);
    const t0 = performance.now();
    await batch.join(0, prompt);
    if (pass > 0) best = Math.min(best, performance.now() - t0);
    batch.dispose();
  }
  return (PROMPT_TOKENS * 1000) / best;
}

/** This script again in a child process, for one case; its tokens/s. */
function child(threads: number, weights: WeightsSetting): Promise<number> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...process.execArgv, __filename], {
      env: { ...process.env, CASE: `${threads},${weights}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk));
    proc.on('exit', (code) => (code === 0 ? resolve(Number(out.trim().split('\n').pop())) : reject(new Error(`child exited with ${code}`))));
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function main(): Promise<void> {
  const own = process.env['CASE'];
  if (own) {
    const [threads, weights] = own.split(',');
    console.log(await prefillRate(Number(threads), weights as WeightsSetting));
    return;
  }
  if (!fs.existsSync(path.join(MODEL_DIR, 'model.safetensors'))) throw new Error(`no model at ${MODEL_DIR}: run generate.bench.ts first`);
  const cases = WEIGHTS.flatMap((weights) => THREADS.map((threads) => ({ threads, weights, rates: [] as number[] })));
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) c.rates.push(await child(c.threads, c.weights));
  }
  console.log(`prefill, ${PROMPT_TOKENS}-token prompt (${ROUNDS} rounds, alternating)\n\n| weights | matmul threads | median tokens/s | range |\n|---|---|---|---|`);
  for (const c of cases) console.log(`| ${c.weights} | ${c.threads} | ${median(c.rates).toFixed(1)} | ${Math.min(...c.rates).toFixed(1)}-${Math.max(...c.rates).toFixed(1)} |`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
