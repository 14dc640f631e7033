/**
 * The matmul kernel's two arithmetics side by side (libs/engine/assembly/matmul.ts, section 2):
 * a multiply then an add (matmulF32, matmulBf16) against one fused multiply-add
 * (matmulF32Fused, matmulBf16Fused: what the engine runs), over the gate|up projections of
 * 24 layers of a SmolLM2-135M-shaped model (576 x 3072 each, 170 MB as f32: streamed from
 * memory), f32 and bf16 panels, for M rows; one row with the narrow (1 x 8) and the wide
 * (1 x 32) tile.
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/fused.bench.ts
 *   MS=1,4,64 ROUNDS=15 npx tsx --tsconfig tsconfig.base.json libs/engine/bench/fused.bench.ts
 *
 * Both exports of the same module run on the same panels, one call each in turn, so that a
 * machine shared with other jobs drifts between rounds, not between the two sides. Each figure
 * is the median over the rounds of one pass over the 24 matrices. Prints a markdown table.
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { bf16ToF32, f32ToBf16 } from '../src/dtype';
import { PackedWeights, packWeights } from '../src/kernels/matmul';
import type { MatmulKernels } from '../src/kernels/matmul-threads';
import { MATMUL_WASM } from '../src/kernels/matmul.wasm';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from '../src/kernels/wasm-heap';

const K = 576;
const N = 3072;
const MATRICES = 24;
const MS = (process.env['MS'] ?? '1,4,64').split(',').map(Number);
const ROUNDS = Number(process.env['ROUNDS'] ?? 15);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

async function main(): Promise<void> {
  await selectBackend('wasm');
  const backend = tf.backend() as unknown as WasmBackendInternals;
  const kernels = instantiateOnHeap(MATMUL_WASM, backend) as unknown as MatmulKernels;
  const weights = Array.from({ length: MATRICES }, (_, i) => tf.randomNormal([K, N], 0, 0.02, 'float32', i) as tf.Tensor2D);
  const f32 = weights.map((w) => packWeights(w, 'f32') as PackedWeights);
  // The same weights rounded to bf16, so that packWeights makes bf16 panels of them.
  const bf16 = weights.map((w) => packWeights(tf.tensor2d(bf16ToF32(f32ToBf16(w.dataSync() as Float32Array)), [K, N]), 'auto') as PackedWeights);
  console.log(`| panels | rows | tile | multiply, add | fused | fused / multiply, add |\n|---|---|---|---|---|---|`);
  for (const [format, packs] of [['f32', f32], ['bf16', bf16]] as const) {
    const [plain, fused] = format === 'f32' ? [kernels.matmulF32, kernels.matmulF32Fused] : [kernels.matmulBf16, kernels.matmulBf16Fused];
    for (const M of MS) {
      for (const wide of M === 1 ? [false, true] : [false]) {
        const x = tf.randomNormal([M, K], 0, 1, 'float32', 7);
        const xt = tf.zeros([M, K]);
        const out = tf.zeros([M, N]);
        if (M >= 2) kernels.interleaveRows(heapOffset(backend, x), heapOffset(backend, xt), M, K);
        const pass = (matmul: typeof plain) => {
          const t0 = performance.now();
          for (const p of packs) matmul(heapOffset(backend, x), heapOffset(backend, p.panels as tf.Tensor), 0, heapOffset(backend, out), M, K, N, 0, wide ? 1 : 0, heapOffset(backend, xt), 0, N / 8);
          return performance.now() - t0;
        };
        const times: [number[], number[]] = [[], []];
        for (let round = 0; round < ROUNDS; round++) {
          times[0].push(pass(plain));
          times[1].push(pass(fused));
        }
        const [a, b] = times.map(median);
        const gflops = (ms: number) => ((2 * M * K * N * MATRICES) / ms / 1e6).toFixed(1);
        const tile = M === 1 ? (wide ? '1 x 32' : '1 x 8') : M === 4 || M % 4 === 0 ? '4 x 8' : 'mixed';
        console.log(`| ${format} | ${M} | ${tile} | ${a.toFixed(1)} ms (${gflops(a)} GFLOP/s) | ${b.toFixed(1)} ms (${gflops(b)} GFLOP/s) | ${(b / a).toFixed(2)} |`);
        tf.dispose([x, xt, out]);
      }
    }
  }
}

void main();
