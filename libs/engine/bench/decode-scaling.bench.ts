/**
 * How decoding throughput grows with the batch, and with a second process on the second core
 * (what `npm start` does, one inference worker per core): SmolLM2-135M-shaped model, wasm,
 * greedy sampling included. It bounds what N concurrent streams can get on this machine,
 * before prefill, scheduling and the rest of the stack take their share.
 *
 *   npx tsx libs/engine/bench/decode-scaling.bench.ts
 *   WEIGHTS=bf16 npx tsx libs/engine/bench/decode-scaling.bench.ts
 *   PROMPT_TOKENS=1000 npx tsx libs/engine/bench/decode-scaling.bench.ts   (long contexts)
 *   MATMUL_THREADS=2 DECODE_BATCH=8 npx tsx libs/engine/bench/decode-scaling.bench.ts   (one process, one batch, the matmul on 2 threads)
 *
 * Uses the model generate.bench.ts makes under var/models/. Every figure comes from fresh
 * processes (one per concurrent batch), started together. Prints a markdown table.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { selectBackend } from '../src/backend';
import { DecodeBatch } from '../src/decode-batch';
import { loadModel } from '../src/loader';
import { createRng, sampleToken } from '../src/sampling';

/** WEIGHTS=bf16: the bf16 model (generate.bench.ts with WEIGHTS=bf16 makes it); default f32. */
const MODEL_DIR = path.resolve(__dirname, '../../../var/models', process.env['WEIGHTS'] === 'bf16' ? 'bench-smollm2-135m-bf16' : 'bench-smollm2-135m');
const STEPS = 40;
/** PROMPT_TOKENS: the first sequence's prompt length (default 24); each next one's is 8 tokens longer. */
const PROMPT_TOKENS = Number(process.env['PROMPT_TOKENS'] ?? 24);
/** Time every process of a case is given to load its model and warm up before all start measuring. */
const SETUP_MS = Number(process.env['SETUP_MS'] ?? 15_000);
/** MATMUL_THREADS: threads each process divides its products between (default 1). */
const MATMUL_THREADS = Number(process.env['MATMUL_THREADS'] ?? 1);
/** [processes, batch per process] */
const CASES: [number, number][] = [
  [1, 1],
  [1, 2],
  [1, 4],
  [1, 8],
  [2, 1],
  [2, 4],
];

/** Decode tokens/s of one batch of `size` sequences, in this process. */
async function decodeRate(size: number): Promise<number> {
  await selectBackend('wasm');
  // As the inference workers load it: weights packed for the kernel, read-ahead tuned.
  const lm = await loadModel(MODEL_DIR, { inferenceOnly: true, matmulThreads: MATMUL_THREADS });
  const rng = createRng(size);
  const V = lm.config.vocabSize;
  const prompt = (n: number) => Array.from({ length: n }, () => 3 + Math.floor(rng.next() * (V - 3)));
  const greedy = (logits: Float32Array) => sampleToken(logits, { temperature: 0 }, rng).id;
  const batch = new DecodeBatch<number>(lm.model);
  const next = new Map<number, number>();
  for (let i = 0; i < size; i++) next.set(i, greedy(await batch.join(i, prompt(PROMPT_TOKENS + 8 * i))));
  const step = async () => {
    const logits = await batch.step(next);
    for (const [i, l] of logits) next.set(i, greedy(l));
  };
  await step(); // warm-up
  // Processes of one case start measuring together, each after its own set-up.
  const startAt = Number(process.env['START_AT'] ?? 0);
  if (Date.now() < startAt) await new Promise((resolve) => setTimeout(resolve, startAt - Date.now()));
  const t0 = performance.now();
  for (let s = 0; s < STEPS; s++) await step();
  return (size * STEPS * 1000) / (performance.now() - t0);
}

/** This script again in a child process, decoding a batch of `size`; its tokens/s. */
function child(size: number, startAt: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...process.execArgv, __filename], {
      env: { ...process.env, DECODE_BATCH: String(size), START_AT: String(startAt) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk));
    proc.on('exit', (code) => (code === 0 ? resolve(Number(out.trim().split('\n').pop())) : reject(new Error(`child exited with ${code}`))));
  });
}

async function main(): Promise<void> {
  const size = process.env['DECODE_BATCH'];
  if (size) {
    console.log(await decodeRate(Number(size)));
    return;
  }
  if (!fs.existsSync(path.join(MODEL_DIR, 'model.safetensors'))) throw new Error(`no model at ${MODEL_DIR}: run generate.bench.ts (with the same WEIGHTS) first`);
  let single = 0;
  console.log('| processes x batch | tokens/s (each) | aggregate tokens/s | vs one stream |\n|---|---|---|---|');
  for (const [processes, batch] of CASES) {
    const startAt = Date.now() + SETUP_MS;
    const rates = await Promise.all(Array.from({ length: processes }, () => child(batch, startAt)));
    const total = rates.reduce((a, b) => a + b, 0);
    if (processes === 1 && batch === 1) single = total;
    console.log(`| ${processes} x ${batch} | ${rates.map((r) => r.toFixed(1)).join(', ')} | ${total.toFixed(1)} | ${(total / single).toFixed(2)}x |`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
