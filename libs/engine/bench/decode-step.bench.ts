/**
 * Where a decoding step's time goes, on a SmolLM2-135M-shaped model with its weights held as
 * f32, bf16 and q8:
 *
 *   npx tsx libs/engine/bench/decode-step.bench.ts      (ROUNDS, STEPS, BATCHES)
 *
 * For each format and batch size: the time of a step (model forward through DecodeBatch, one
 * new token per row, no sampling) and of the step's products alone (the same 121 packed
 * products, projections and lm_head, on inputs of the same shapes, with nothing between them);
 * the difference is everything else: attention, norms, RoPE, the gate, residual adds, the
 * step's mask and RoPE tables, reading back the logits. Best of ROUNDS passes of STEPS steps,
 * one process, one thread.
 */
import * as os from 'node:os';
import * as tf from '@tensorflow/tfjs-core';
import { DecodeBatch } from '../src/decode-batch';
import { packedMatMul } from '../src/kernels/matmul';
import type { LoadedModel } from '../src/loader';
import { loadWeightVariants } from './weight-variants';

const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const STEPS = Number(process.env['STEPS'] ?? 16);
const BATCHES = (process.env['BATCHES'] ?? '1,8').split(',').map(Number);

/** Best ms per step over ROUNDS passes of STEPS calls of `step`. */
async function bestMs(step: () => Promise<unknown>): Promise<number> {
  let best = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now();
    for (let s = 0; s < STEPS; s++) await step();
    best = Math.min(best, (performance.now() - t0) / STEPS);
  }
  return best;
}

async function measure(lm: LoadedModel, rows: number): Promise<{ step: number; products: number }> {
  const batch = new DecodeBatch<number>(lm.model);
  for (let b = 0; b < rows; b++) await batch.join(b, Array.from({ length: 24 }, (_, i) => 100 + 7 * i + b));
  let token = 5;
  const decodeStep = async () => {
    await batch.step(new Map(Array.from({ length: rows }, (_, b) => [b, token + b])));
    token = (token * 7 + 3) % 1000;
  };
  const linears = [...lm.model.linears().map((l) => l.linear), lm.model.lmHead];
  const inputs = new Map<number, tf.Tensor2D>();
  for (const l of linears) if (!inputs.has(l.inFeatures)) inputs.set(l.inFeatures, tf.ones([rows, l.inFeatures]));
  const products = async () => {
    for (const l of linears) (packedMatMul(inputs.get(l.inFeatures) as tf.Tensor2D, l.packedWeights() as NonNullable<ReturnType<typeof l.packedWeights>>, l.bias, lm.model.matmulPlan) as tf.Tensor).dispose();
  };
  await bestMs(decodeStep); // warm-up
  const result = { step: await bestMs(decodeStep), products: await bestMs(products) };
  batch.dispose();
  tf.dispose([...inputs.values()]);
  return result;
}

async function main(): Promise<void> {
  const variants = await loadWeightVariants();
  console.log(`${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}, best of ${ROUNDS} passes of ${STEPS} steps, load average ${os.loadavg()[0].toFixed(1)}\n`);
  console.log('| weights | batch | step | products | the rest |\n|---|---|---|---|---|');
  for (const rows of BATCHES) {
    for (const [name, lm] of variants) {
      const { step, products } = await measure(lm, rows);
      console.log(`| ${name} | ${rows} | ${step.toFixed(1)} ms | ${products.toFixed(1)} ms | ${(step - products).toFixed(1)} ms |`);
    }
  }
  for (const [, lm] of variants) lm.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
