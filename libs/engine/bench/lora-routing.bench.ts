/**
 * Several LoRA checkpoints of one base model served in one decode batch (lora/lora-router.ts),
 * on the SmolLM2-135M-shaped bench model with f32 weights: a batch whose rows alternate
 * between two checkpoints (the default spec, r 8 on all seven projections), decoded with each
 * block in one call (kernels/decode-block.ts) and with the blocks as tfjs ops:
 *
 *   npx tsx libs/engine/bench/lora-routing.bench.ts      (ROUNDS, STEPS, BATCHES)
 *
 * One process, one thread; the two paths take turns round after round (greedy, STEPS tokens
 * after 24-token prompts, sampling and routing included). Both give the same bits (the tests
 * check it), so only the time differs. Prints medians and ranges of the batch's aggregate
 * tokens/s. Needs the f32 bench model: generate.bench.ts makes it.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { selectBackend } from '../src/backend';
import { DecodeBatch } from '../src/decode-batch';
import { setDecodeBlock } from '../src/kernels/decode-block';
import { LoadedModel, loadModel } from '../src/loader';
import { applyAdapter, LoraAttachment } from '../src/lora/lora-layer';
import { LoraRouter } from '../src/lora/lora-router';
import { DEFAULT_LORA_SPEC, initLoraWeights } from '../src/lora/peft';
import { createRng, sampleToken } from '../src/sampling';
import { median } from './weight-variants';

const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const STEPS = Number(process.env['STEPS'] ?? 32);
const BATCHES = (process.env['BATCHES'] ?? '2,8').split(',').map(Number);
const PROMPT_TOKENS = 24;
const MODEL = path.resolve(__dirname, '../../../var/models/bench-smollm2-135m');

/** A serving checkpoint: B made non-zero (a fresh adapter's is zero), kept detached for the router. */
function checkpoint(lm: LoadedModel, seed: number): LoraAttachment {
  const tensors = initLoraWeights(lm.config, DEFAULT_LORA_SPEC, seed);
  for (const [name, t] of tensors) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.01 * Math.sin(seed + i)));
  const attachment = applyAdapter(lm, { spec: DEFAULT_LORA_SPEC, tensors });
  attachment.detach();
  return attachment;
}

/** Aggregate tokens/s decoding `size` sequences greedily for STEPS tokens, row i under adapters[i % 2]. */
async function decodeRate(lm: LoadedModel, router: LoraRouter, adapters: LoraAttachment[], size: number, seed: number): Promise<number> {
  const rng = createRng(seed);
  const prompt = () => Array.from({ length: PROMPT_TOKENS }, () => 3 + Math.floor(rng.next() * (lm.config.vocabSize - 3)));
  const batch = new DecodeBatch<number>(lm.model);
  const next = new Map<number, number>();
  for (let i = 0; i < size; i++) {
    router.route([adapters[i % 2]]);
    next.set(i, sampleToken(await batch.join(i, prompt()), { temperature: 0 }, rng).id);
  }
  const t0 = performance.now();
  for (let s = 0; s < STEPS; s++) {
    router.route(batch.ids.map((i) => adapters[i % 2]));
    for (const [i, logits] of await batch.step(next)) next.set(i, sampleToken(logits, { temperature: 0 }, rng).id);
  }
  const rate = (size * STEPS * 1000) / (performance.now() - t0);
  router.route([]);
  batch.dispose();
  return rate;
}

async function main(): Promise<void> {
  await selectBackend('wasm');
  const lm = await loadModel(MODEL, { inferenceOnly: true });
  const adapters = [checkpoint(lm, 1), checkpoint(lm, 2)];
  const router = new LoraRouter(lm.model);
  const cases = BATCHES.map((size) => ({ size, oneCall: [] as number[], ops: [] as number[] }));
  for (const c of cases) await decodeRate(lm, router, adapters, c.size, 0); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) {
      for (const oneCall of round % 2 ? [true, false] : [false, true]) {
        setDecodeBlock(oneCall);
        (oneCall ? c.oneCall : c.ops).push(await decodeRate(lm, router, adapters, c.size, round + 1));
      }
    }
  }
  setDecodeBlock(true);
  const range = (r: number[]) => `${median(r).toFixed(1)} (${Math.min(...r).toFixed(1)}-${Math.max(...r).toFixed(1)})`;
  console.log(`${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}, ${ROUNDS} rounds of ${STEPS} steps, load average ${os.loadavg()[0].toFixed(1)}\n`);
  console.log('| batch, two checkpoints | blocks in one call, tokens/s | blocks as tfjs ops, tokens/s | speed-up |\n|---|---|---|---|');
  for (const c of cases) console.log(`| ${c.size} | ${range(c.oneCall)} | ${range(c.ops)} | ${(median(c.oneCall) / median(c.ops)).toFixed(2)} |`);
  router.dispose();
  adapters.forEach((a) => a.dispose());
  lm.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
