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
import { LoadedModel, loadModel } from '../src/loader';
import { applyAdapter, LoraAttachment } from '../src/lora/lora-layer';
import { LoraRouter } from '../src/lora/lora-router';
import { DEFAULT_LORA_SPEC, initLoraWeights } from '../src/lora/peft';
import { alternateOneCall, greedyDecodeRate, rateRange } from './decode-rate';
import { median } from './weight-variants';

const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const STEPS = Number(process.env['STEPS'] ?? 32);
const BATCHES = (process.env['BATCHES'] ?? '2,8').split(',').map(Number);
const MODEL = path.resolve(__dirname, '../../../var/models/bench-smollm2-135m');

/** A serving checkpoint: B made non-zero (a fresh adapter's is zero), kept detached for the router. */
function checkpoint(lm: LoadedModel, seed: number): LoraAttachment {
  const tensors = initLoraWeights(lm.config, DEFAULT_LORA_SPEC, seed);
  for (const [name, t] of tensors) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.01 * Math.sin(seed + i)));
  const attachment = applyAdapter(lm, { spec: DEFAULT_LORA_SPEC, tensors });
  attachment.detach();
  return attachment;
}

async function main(): Promise<void> {
  await selectBackend('wasm');
  const lm = await loadModel(MODEL, { inferenceOnly: true });
  const adapters = [checkpoint(lm, 1), checkpoint(lm, 2)];
  const router = new LoraRouter(lm.model);
  // Sequence i decodes under adapters[i % 2].
  const route = (ids: readonly number[]) => router.route(ids.map((i) => adapters[i % 2]));
  const rates = await alternateOneCall(BATCHES, ROUNDS, async (size, seed) => {
    const rate = await greedyDecodeRate(lm, size, STEPS, seed, route);
    router.route([]);
    return rate;
  });
  console.log(`${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}, ${ROUNDS} rounds of ${STEPS} steps, load average ${os.loadavg()[0].toFixed(1)}\n`);
  console.log('| batch, two checkpoints | blocks in one call, tokens/s | blocks as tfjs ops, tokens/s | speed-up |\n|---|---|---|---|');
  BATCHES.forEach((size, i) => {
    const { oneCall, ops } = rates[i];
    console.log(`| ${size} | ${rateRange(oneCall)} | ${rateRange(ops)} | ${(median(oneCall) / median(ops)).toFixed(2)} |`);
  });
  router.dispose();
  adapters.forEach((a) => a.dispose());
  lm.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
