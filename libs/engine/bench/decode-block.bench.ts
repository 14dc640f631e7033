/**
 * Decoding with each block in one call (kernels/decode-block.ts) against the same blocks as
 * tfjs ops, on a SmolLM2-135M-shaped model with its weights held as f32, bf16 and q8, and
 * with f32 weights serving a LoRA checkpoint (r 8 on all seven projections):
 *
 *   ROUNDS=5 npx tsx libs/engine/bench/decode-block.bench.ts      (ROUNDS, STEPS, BATCHES)
 *
 * One process, one thread; the two paths take turns round after round, for every format and
 * batch size (greedy, STEPS tokens after 24-token prompts, sampling included). Both give the
 * same tokens (the same bits: the tests check it), so only the time differs. Prints medians and
 * ranges in tokens/s (a batch's aggregate). Needs the bench models: generate.bench.ts makes them
 * (once without and once with WEIGHTS=bf16).
 */
import * as os from 'node:os';
import { DecodeBatch } from '../src/decode-batch';
import { setDecodeBlock } from '../src/kernels/decode-block';
import type { LoadedModel } from '../src/loader';
import { createRng, sampleToken } from '../src/sampling';
import { loadWeightVariants, median } from './weight-variants';

const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const STEPS = Number(process.env['STEPS'] ?? 48);
const BATCHES = (process.env['BATCHES'] ?? '1,8').split(',').map(Number);
const PROMPT_TOKENS = 24;

/** Aggregate tokens/s decoding `size` sequences greedily for STEPS tokens each. */
async function decodeRate(lm: LoadedModel, size: number, seed: number): Promise<number> {
  const rng = createRng(seed);
  const prompt = () => Array.from({ length: PROMPT_TOKENS }, () => 3 + Math.floor(rng.next() * (lm.config.vocabSize - 3)));
  const batch = new DecodeBatch<number>(lm.model);
  const next = new Map<number, number>();
  for (let i = 0; i < size; i++) next.set(i, sampleToken(await batch.join(i, prompt()), { temperature: 0 }, rng).id);
  const t0 = performance.now();
  for (let s = 0; s < STEPS; s++) {
    for (const [i, logits] of await batch.step(next)) next.set(i, sampleToken(logits, { temperature: 0 }, rng).id);
  }
  const rate = (size * STEPS * 1000) / (performance.now() - t0);
  batch.dispose();
  return rate;
}

async function main(): Promise<void> {
  const variants = await loadWeightVariants({ lora: true });
  const cases = variants.flatMap(([format, lm]) => BATCHES.map((size) => ({ format, lm, size, oneCall: [] as number[], ops: [] as number[] })));
  for (const c of cases) await decodeRate(c.lm, c.size, 0); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) {
      for (const oneCall of round % 2 ? [true, false] : [false, true]) {
        setDecodeBlock(oneCall);
        (oneCall ? c.oneCall : c.ops).push(await decodeRate(c.lm, c.size, round + 1));
      }
    }
  }
  setDecodeBlock(true);
  const range = (r: number[]) => `${median(r).toFixed(1)} (${Math.min(...r).toFixed(1)}-${Math.max(...r).toFixed(1)})`;
  console.log(`${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}, ${ROUNDS} rounds of ${STEPS} steps, load average ${os.loadavg()[0].toFixed(1)}\n`);
  console.log('| weights | batch | blocks in one call, tokens/s | blocks as tfjs ops, tokens/s | speed-up |\n|---|---|---|---|---|');
  for (const c of cases) console.log(`| ${c.format} | ${c.size} | ${range(c.oneCall)} | ${range(c.ops)} | ${(median(c.oneCall) / median(c.ops)).toFixed(2)} |`);
  for (const [, lm] of variants) lm.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
