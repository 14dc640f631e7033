/**
 * A training step's two big products per projection side by side: the forward product x W on
 * the packed kernel (fused multiply-adds, as every product runs) and the input gradient dy W^T on
 * the transposed kernel from the same panels (kernels/matmul-transposed.ts), for the
 * SmolLM2-135M projections (q|k|v, o, gate|up, down, the lm_head) at M rows:
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/transposed.bench.ts   (M=63 ROUNDS=9)
 *
 * Each shape's two products take turns, one call each per round; figures are medians over the
 * rounds. Prints a markdown table.
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { PackedWeights, packedMatMul, packWeights } from '../src/kernels/matmul';
import { packedMatMulTransposed } from '../src/kernels/matmul-transposed';

const M = Number(process.env['M'] ?? 63);
const ROUNDS = Number(process.env['ROUNDS'] ?? 9);
const SHAPES: [string, number, number][] = [
  ['q|k|v', 576, 960],
  ['o', 576, 576],
  ['gate|up', 576, 3072],
  ['down', 1536, 576],
  ['lm_head', 576, 49152],
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

function time(f: () => tf.Tensor): number {
  const t0 = performance.now();
  f().dispose();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  await selectBackend('wasm');
  console.log(`| projection | K x N | forward x W | input gradient dy W^T | gradient / forward |\n|---|---|---|---|---|`);
  for (const [name, K, N] of SHAPES) {
    const w = tf.randomNormal([K, N], 0, 0.02, 'float32', 1) as tf.Tensor2D;
    const packed = packWeights(w, 'f32') as PackedWeights;
    const x = tf.randomNormal([M, K], 0, 1, 'float32', 2) as tf.Tensor2D;
    const dy = tf.randomNormal([M, N], 0, 1, 'float32', 3) as tf.Tensor2D;
    const times: [number[], number[]] = [[], []];
    for (let round = 0; round <= ROUNDS; round++) {
      const a = time(() => packedMatMul(x, packed) as tf.Tensor);
      const b = time(() => packedMatMulTransposed(dy, packed) as tf.Tensor);
      if (round === 0) continue; // warm-up
      times[0].push(a);
      times[1].push(b);
    }
    const [a, b] = times.map(median);
    const gflops = (ms: number) => ((2 * M * K * N) / ms / 1e6).toFixed(1);
    console.log(`| ${name} | ${K} x ${N} | ${a.toFixed(2)} ms (${gflops(a)} GFLOP/s) | ${b.toFixed(2)} ms (${gflops(b)} GFLOP/s) | ${(b / a).toFixed(2)} |`);
    tf.dispose([w, x, dy]);
    packed.dispose();
  }
}

void main();
