/**
 * Decoding one sequence after a long context, with the KV cache appended in place (spare
 * columns written where tfjs-wasm keeps them, model/kv-cache.ts) against appended by
 * concatenation (every layer's keys and values copied at every step), on the SmolLM2-135M-shaped
 * bench model, wasm backend, one thread:
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/kv-cache.bench.ts   (CONTEXTS=24,1000,2000 ROUNDS=5 STEPS=16; WEIGHTS=bf16)
 *
 * For each context length, one prompt of that many tokens is prefilled into a cache of each
 * kind; then the two take turns, STEPS decoding steps (model.forward of one token, no sampling)
 * each per round. Figures are the medians over the rounds, in ms per token. Prints a markdown
 * table.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { LoadedModel, loadModel } from '../src/loader';
import { KVCache } from '../src/model/kv-cache';

const MODELS = path.resolve(__dirname, '../../../var/models');
const DIR = path.join(MODELS, process.env['WEIGHTS'] === 'bf16' ? 'bench-smollm2-135m-bf16' : 'bench-smollm2-135m');
const CONTEXTS = (process.env['CONTEXTS'] ?? '24,1000,2000').split(',').map(Number);
const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const STEPS = Number(process.env['STEPS'] ?? 16);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Runs `tokens` through the model into `cache`, one forward pass. */
function feed(lm: LoadedModel, cache: KVCache, tokens: number[]): void {
  tf.dispose(lm.model.forward([tokens], { cache }));
}

/** ms per token of STEPS one-token steps into `cache`. */
function decode(lm: LoadedModel, cache: KVCache, from: number): number {
  const t0 = performance.now();
  for (let s = 0; s < STEPS; s++) feed(lm, cache, [3 + ((from + s * 31) % 40000)]);
  return (performance.now() - t0) / STEPS;
}

async function main(): Promise<void> {
  await selectBackend('wasm');
  const lm = await loadModel(DIR, { inferenceOnly: true });
  console.log(`${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores, Node ${process.version}; ${path.basename(DIR)}; ${ROUNDS} rounds of ${STEPS} steps each way; load average ${os.loadavg()[0].toFixed(2)}\n`);
  console.log('| context (tokens) | in place, ms/token | concatenated, ms/token | speed-up |\n|---|---|---|---|');
  for (const context of CONTEXTS) {
    const prompt = Array.from({ length: context }, (_, i) => 3 + ((i * 37) % 40000));
    const caches = [lm.model.newCache(), new KVCache(lm.config.numLayers, { inPlace: false })];
    if (!caches[0].inPlace) throw new Error('the KV cache does not append in place on this backend');
    const times: number[][] = [[], []];
    caches.forEach((cache) => {
      cache.addEmptyRow();
      feed(lm, cache, prompt);
    });
    for (let round = 0; round < ROUNDS; round++) caches.forEach((cache, i) => times[i].push(decode(lm, cache, round * STEPS)));
    const [inPlace, concatenated] = times.map(median);
    console.log(`| ${context} | ${inPlace.toFixed(1)} | ${concatenated.toFixed(1)} | ${(concatenated / inPlace).toFixed(2)}x |`);
    caches.forEach((cache) => cache.dispose());
  }
  lm.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
