/**
 * Decoding one sequence with the weights held four ways, on a SmolLM2-135M-shaped model: f32,
 * bf16 (the checkpoint stored in bf16) in the layout timing at load chose, q8 (the f32
 * checkpoint quantized at load: loadModel's weights 'q8') and bf16 in the other layout (in
 * pairs or panels apart: the kernel source's section 9), all in one process on one thread,
 * in alternation; then how far q8's logprobs are from f32's on the tokens q8 samples.
 *
 *   npx tsx libs/engine/bench/weights.bench.ts
 *   ROUNDS=9 PROMPTS=8 npx tsx libs/engine/bench/weights.bench.ts
 *
 * Uses the f32 and bf16 models generate.bench.ts makes under var/models/ (run it once with and
 * once without WEIGHTS=bf16). Decode: batch 1, greedy, STEPS tokens after a 24-token prompt,
 * sampling included; each round times the four once, in turn; prints the median and range of
 * ROUNDS. Logprobs: PROMPTS random prompts of 32 tokens, 32 tokens sampled from q8 at
 * temperature 1 with the logprobs the server would return, then f32's logprob of the same
 * tokens in the same contexts (one forward over prompt and completion): |Δ logprob| over all
 * sampled tokens, max and mean.
 *
 * The memory limit: each round also times a pass that only reads each model's packed weights
 * (one load per cache line, the matmul kernel's read-ahead loop), what one token must stream at
 * the least; 1000 ms over its median is the rate at which memory alone would let one sequence
 * decode, and the table gives each decode rate as a share of it.
 */
import * as tf from '@tensorflow/tfjs-core';
import { DecodeBatch } from '../src/decode-batch';
import type { LoadedModel } from '../src/loader';
import { createRng, sampleToken } from '../src/sampling';
import { MATMUL_WASM } from '../src/kernels/matmul.wasm';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from '../src/kernels/wasm-heap';
import { loadWeightVariants, median } from './weight-variants';

const ROUNDS = Number(process.env['ROUNDS'] ?? 7);
const STEPS = Number(process.env['STEPS'] ?? 48);
const PROMPTS = Number(process.env['PROMPTS'] ?? 4);
const PROMPT_TOKENS = 24;
const SAMPLED_TOKENS = 32;

function randomPrompt(lm: LoadedModel, n: number, seed: number): number[] {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => 3 + Math.floor(rng.next() * (lm.config.vocabSize - 3)));
}

/** Tokens/s decoding one sequence greedily for STEPS tokens. */
async function decodeRate(lm: LoadedModel, seed: number): Promise<number> {
  const rng = createRng(seed);
  const batch = new DecodeBatch<number>(lm.model);
  let next = sampleToken(await batch.join(0, randomPrompt(lm, PROMPT_TOKENS, seed)), { temperature: 0 }, rng).id;
  const t0 = performance.now();
  for (let s = 0; s < STEPS; s++) {
    const logits = (await batch.step(new Map([[0, next]]))).get(0) as Float32Array;
    next = sampleToken(logits, { temperature: 0 }, rng).id;
  }
  const rate = (STEPS * 1000) / (performance.now() - t0);
  batch.dispose();
  return rate;
}

/** Samples SAMPLED_TOKENS from `lm` at temperature 1: the tokens and the logprobs the sampler reports. */
async function sample(lm: LoadedModel, prompt: number[], seed: number): Promise<{ ids: number[]; logprobs: number[] }> {
  const rng = createRng(seed);
  const batch = new DecodeBatch<number>(lm.model);
  let token = sampleToken(await batch.join(0, prompt), { temperature: 1 }, rng);
  const ids: number[] = [];
  const logprobs: number[] = [];
  for (let s = 0; s < SAMPLED_TOKENS; s++) {
    ids.push(token.id);
    logprobs.push(token.logprob);
    if (s + 1 < SAMPLED_TOKENS) token = sampleToken((await batch.step(new Map([[0, token.id]]))).get(0) as Float32Array, { temperature: 1 }, rng);
  }
  batch.dispose();
  return { ids, logprobs };
}

/** `lm`'s logprob of each of `ids` following `prompt` and the ids before it. */
function scoredLogprobs(lm: LoadedModel, prompt: number[], ids: number[]): number[] {
  const V = lm.config.vocabSize;
  const logits = lm.model.forward([[...prompt, ...ids]]);
  const all = logits.dataSync() as Float32Array;
  logits.dispose();
  return ids.map((id, i) => {
    const row = all.subarray((prompt.length - 1 + i) * V, (prompt.length + i) * V);
    let max = -Infinity;
    for (const v of row) max = Math.max(max, v);
    let sum = 0;
    for (const v of row) sum += Math.exp(v - max);
    return row[id] - max - Math.log(sum);
  });
}

async function main(): Promise<void> {
  const variants = await loadWeightVariants({ otherLayout: true });
  const wasm = tf.backend() as unknown as WasmBackendInternals;
  const touch = (instantiateOnHeap(MATMUL_WASM, wasm) as Record<string, (from: number, bytes: number, sink: number) => void>)['touch'];
  const sink = tf.zeros([4]);
  /** Ms to read every packed weight of `lm` once, with no arithmetic. */
  const readPass = (lm: LoadedModel): number => {
    const t0 = performance.now();
    for (const w of lm.model.packedWeights()) touch(heapOffset(wasm, w.panels as tf.Tensor), w.bytes, heapOffset(wasm, sink));
    return performance.now() - t0;
  };
  const bytes = variants.map(([, lm]) => lm.model.packedWeights().reduce((sum, w) => sum + w.bytes, 0));
  for (const [, lm] of variants) await decodeRate(lm, 0); // warm-up
  const rates = variants.map((): number[] => []);
  const reads = variants.map((): number[] => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [, lm]] of variants.entries()) {
      rates[i].push(await decodeRate(lm, round + 1));
      reads[i].push(readPass(lm));
    }
  }
  console.log(`decode, batch 1, one thread (${ROUNDS} rounds, alternating)\n\n| weights | median tokens/s | range | weights read per token | read-only pass | memory limit | of the limit |\n|---|---|---|---|---|---|---|`);
  variants.forEach(([name], i) => {
    const r = rates[i];
    const read = median(reads[i]);
    const limit = 1000 / read;
    console.log(
      `| ${name} | ${median(r).toFixed(1)} | ${Math.min(...r).toFixed(1)}-${Math.max(...r).toFixed(1)} | ${(bytes[i] / 1e6).toFixed(0)} MB | ${read.toFixed(1)} ms (${(bytes[i] / read / 1e6).toFixed(1)} GB/s) | ${limit.toFixed(1)} tokens/s | ${((100 * median(r)) / limit).toFixed(0)} % |`,
    );
  });
  sink.dispose();

  const [f32, q8] = [variants[0][1], variants[2][1]];
  const deltas: number[] = [];
  for (let p = 0; p < PROMPTS; p++) {
    const prompt = randomPrompt(q8, 32, 1000 + p);
    const sampled = await sample(q8, prompt, p);
    const reference = tf.tidy(() => scoredLogprobs(f32, prompt, sampled.ids));
    sampled.logprobs.forEach((l, i) => deltas.push(Math.abs(l - reference[i])));
  }
  const mean = deltas.reduce((a, b) => a + b, 0) / deltas.length;
  console.log(`\nq8 against f32, logprobs of ${deltas.length} tokens sampled from q8 (temperature 1): max |Δ| ${Math.max(...deltas).toFixed(4)}, mean |Δ| ${mean.toFixed(4)}`);
  for (const [, lm] of variants) lm.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
