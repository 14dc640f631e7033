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
import { alternateOneCall, greedyDecodeRate, rateRange } from './decode-rate';
import { loadWeightVariants, median } from './weight-variants';

const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const STEPS = Number(process.env['STEPS'] ?? 48);
const BATCHES = (process.env['BATCHES'] ?? '1,8').split(',').map(Number);

async function main(): Promise<void> {
  const variants = await loadWeightVariants({ lora: true });
  const cases = variants.flatMap(([format, lm]) => BATCHES.map((size) => ({ format, lm, size })));
  const rates = await alternateOneCall(cases, ROUNDS, (c, seed) => greedyDecodeRate(c.lm, c.size, STEPS, seed));
  console.log(`${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}, ${ROUNDS} rounds of ${STEPS} steps, load average ${os.loadavg()[0].toFixed(1)}\n`);
  console.log('| weights | batch | blocks in one call, tokens/s | blocks as tfjs ops, tokens/s | speed-up |\n|---|---|---|---|---|');
  cases.forEach((c, i) => {
    const { oneCall, ops } = rates[i];
    console.log(`| ${c.format} | ${c.size} | ${rateRange(oneCall)} | ${rateRange(ops)} | ${(median(oneCall) / median(ops)).toFixed(2)} |`);
  });
  for (const [, lm] of variants) lm.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
