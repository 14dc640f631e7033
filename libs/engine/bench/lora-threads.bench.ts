/**
 * An adapted projection's two passes on the matmul threads, SmolLM2-135M's projections with
 * LoRA r 8 on every part (q|k|v, o, gate|up, down) at M rows, over the same threaded panels:
 *   - frozen: the frozen product alone (x W, dy W^T), divided between the threads;
 *   - calling thread: the same, then the adapters on the calling thread's LoRA kernels
 *     (addLoraDeltas; loraGradients and its share of dx added);
 *   - forward: frozen product and deltas in one call, the deltas divided between the threads
 *     too (projectWithLora);
 *   - backward beside: the adapters' backward on the calling thread while the helpers compute
 *     the frozen dx (packedMatMulTransposedAlongside), as training runs it on two threads;
 *   - backward divided: all of it divided between the threads (loraGradientsOnThreads), as
 *     training runs it from DIVIDED_BACKWARD_THREADS; "-" on fewer threads.
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/lora-threads.bench.ts   (THREADS=2 M=64,2048 ROUNDS=9)
 *
 * The ways take turns, one call each per round; figures are medians over the rounds, for each
 * pass and for all four projections together. Prints a markdown table per M and pass.
 */
import * as os from 'node:os';
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { addLoraDeltas, DIVIDED_BACKWARD_THREADS, LoraPart, loraGradients, loraGradientsOnThreads, projectWithLora } from '../src/kernels/lora';
import { DEFAULT_MATMUL_PLAN, PackedWeights, packedMatMul, packWeights, startMatMulThreads, stopMatMulThreads } from '../src/kernels/matmul';
import { packedMatMulTransposed, packedMatMulTransposedAlongside } from '../src/kernels/matmul-transposed';

const THREADS = Number(process.env['THREADS'] ?? 2);
const ROWS = (process.env['M'] ?? '64,2048').split(',').map(Number);
const ROUNDS = Number(process.env['ROUNDS'] ?? 9);
const RANK = 8;
/** Name, K, and the widths of the parts side by side. */
const SHAPES: [string, number, number[]][] = [
  ['q|k|v', 576, [576, 192, 192]],
  ['o', 576, [576]],
  ['gate|up', 576, [1536, 1536]],
  ['down', 1536, [576]],
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

function time(f: () => tf.Tensor | tf.Tensor[]): number {
  const t0 = performance.now();
  tf.dispose(f());
  return performance.now() - t0;
}

function partsOf(K: number, widths: number[]): LoraPart[] {
  let col = 0;
  return widths.map((width, i) => {
    const part = {
      aT: tf.randomNormal([K, RANK], 0, 0.02, 'float32', 10 + i) as tf.Tensor2D,
      bT: tf.randomNormal([RANK, width], 0, 0.02, 'float32', 20 + i) as tf.Tensor2D,
      scale: tf.scalar(2),
      col,
      width,
    };
    col += width;
    return part;
  });
}

/** A row's times, the divided backward's "-" where the threads are too few to run it. */
function cells(ms: number[], divided: boolean): string {
  return ms.map((t, i) => (i === ms.length - 1 && !divided ? '-' : `${t.toFixed(2)} ms`)).join(' | ');
}

async function main(): Promise<void> {
  await selectBackend('wasm');
  startMatMulThreads(THREADS);
  console.log(`${os.cpus()[0]?.model ?? 'CPU'}, ${os.cpus().length} cores, ${THREADS} matmul threads, Node ${process.version}, LoRA r ${RANK}, ${ROUNDS} rounds, load average ${os.loadavg()[0].toFixed(1)}`);
  for (const M of ROWS) {
    const divided = THREADS >= DIVIDED_BACKWARD_THREADS;
    const totals = [0, 0, 0, 0, 0, 0, 0];
    const rows: string[] = [];
    for (const [name, K, widths] of SHAPES) {
      const N = widths.reduce((a, b) => a + b, 0);
      const w = tf.randomNormal([K, N], 0, 0.02, 'float32', 1) as tf.Tensor2D;
      const packed = packWeights(w, 'f32') as PackedWeights;
      const x = tf.randomNormal([M, K], 0, 1, 'float32', 2) as tf.Tensor2D;
      const dy = tf.randomNormal([M, N], 0, 1, 'float32', 3) as tf.Tensor2D;
      const parts = partsOf(K, widths);
      const frozen = () => packedMatMul(x, packed, null, DEFAULT_MATMUL_PLAN) as tf.Tensor2D;
      const frozenDx = () => packedMatMulTransposed(dy, packed) as tf.Tensor2D;
      const ways: (() => tf.Tensor | tf.Tensor[])[] = [
        frozen,
        () => tf.tidy(() => addLoraDeltas(frozen(), x, parts)),
        () => projectWithLora(x, packed, null, DEFAULT_MATMUL_PLAN, parts) as tf.Tensor2D,
        frozenDx,
        () =>
          tf.tidy(() => {
            const { dx, grads } = loraGradients(x, dy, parts);
            return [tf.add(frozenDx(), dx), ...grads];
          }),
        () =>
          tf.tidy(() => {
            const { dx, result } = packedMatMulTransposedAlongside(dy, packed, () => loraGradients(x, dy, parts)) as { dx: tf.Tensor2D; result: { dx: tf.Tensor2D; grads: tf.Tensor2D[] } };
            return [tf.add(dx, result.dx), ...result.grads];
          }),
        () => {
          if (!divided) return [];
          const { dx, grads } = loraGradientsOnThreads(x, dy, packed, parts) as { dx: tf.Tensor2D; grads: tf.Tensor2D[] };
          return [dx, ...grads];
        },
      ];
      const times: number[][] = ways.map(() => []);
      for (let round = 0; round <= ROUNDS; round++) {
        const t = ways.map(time);
        if (round > 0) t.forEach((ms, i) => times[i].push(ms)); // round 0 warms up
      }
      const medians = times.map(median);
      medians.forEach((ms, i) => (totals[i] += ms));
      rows.push(`| ${name} | ${cells(medians, divided)} |`);
      tf.dispose([w, x, dy, ...parts.flatMap((p) => [p.aT, p.bT, p.scale as tf.Scalar])]);
      packed.dispose();
    }
    const header = 'forward: frozen | forward: + adapters, calling thread | forward: in one call | backward: frozen | backward: + adapters, calling thread | backward: beside | backward: divided';
    console.log(`\nM ${M}\n\n| projection | ${header} |\n|---|---|---|---|---|---|---|---|`);
    console.log(`${rows.join('\n')}\n| all four | ${cells(totals, divided)} |`);
  }
  await stopMatMulThreads();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
