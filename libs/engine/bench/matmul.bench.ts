/**
 * The decoding projections of a whole SmolLM2-135M-shaped model, one call per matrix: 30
 * layers x (qkv 576x960, o 576x576, gate|up 576x3072, down 1536x576) and the lm_head
 * 576x49152, all distinct, so that the weights stream from memory as in the real model
 * (540 MB; together they are far larger than any cache). tf.matMul (XNNPACK) against the
 * packed-weight WebAssembly kernel (src/kernels/matmul.ts) with f32 panels and with bf16
 * panels (the weights are rounded to bf16 first, so these three multiply the same values),
 * and with q8 panels (the same weights quantized to 8 bits: other products, within the
 * quantization error), on the wasm backend, for M rows; and f32 and bf16 panels packed in
 * pairs (the kernel source's section 9: the same products, the layout for one sequence at a
 * time).
 *
 *   npx tsx libs/engine/bench/matmul.bench.ts
 *   MS=1,4,8 ROUNDS=15 ONE_ROW_TILE=narrow npx tsx libs/engine/bench/matmul.bench.ts
 *
 * ONE_ROW_TILE: the unpaired panels' one-row tile, 'wide' (the untuned default) or 'narrow'.
 * MS: row counts, decoding (1-8) and prefill (16 and more; 64 takes about a second per
 * pass). The four run in alternation, round after round; each figure is the median over the
 * rounds of one pass over all the matrices. Prints a markdown table. With 1 in MS, the same
 * rounds also time a pass that only reads each format's panels (one load per cache line, no
 * arithmetic: the kernel's section 5 read-ahead loop), which gives this machine's read
 * bandwidth and so the memory bound of a one-row product; a second table sets the one-row
 * kernel against it.
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { bf16ToF32, f32ToBf16 } from '../src/dtype';
import { DEFAULT_MATMUL_PLAN, MatMulPlan, PackedWeights, packWeights, packedMatMul } from '../src/kernels/matmul';
import { MATMUL_WASM } from '../src/kernels/matmul.wasm';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from '../src/kernels/wasm-heap';

const LAYERS = 30;
const LAYER: [number, number][] = [
  [576, 960],
  [576, 576],
  [576, 3072],
  [1536, 576],
];
const SHAPES: [number, number][] = [...Array.from({ length: LAYERS }, () => LAYER).flat(), [576, 49152]];

const list = (name: string, fallback: string) => (process.env[name] ?? fallback).split(',').map(Number);
const MS = list('MS', '1,2,4,8,16,64');
const ROUNDS = Number(process.env['ROUNDS'] ?? 7);
const PLAN: MatMulPlan = { ...DEFAULT_MATMUL_PLAN, oneRowTile: process.env['ONE_ROW_TILE'] === 'narrow' ? 'narrow' : 'wide', rowsReadAhead: process.env['READ_AHEAD'] === 'on' };

/** The kernel's panels, in the order of the table's columns. */
const PANELS = ['f32 panels', 'bf16 panels', 'q8 panels', 'f32 panels in pairs', 'bf16 panels in pairs'] as const;
type Panels = (typeof PANELS)[number];

interface Matrix {
  K: number;
  weightT: tf.Tensor2D;
  panels: Record<Panels, PackedWeights>;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function timed(run: () => void): number {
  const t0 = performance.now();
  run();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  await selectBackend('wasm');
  const matrices: Matrix[] = SHAPES.map(([K, N], i) => {
    const uniform = tf.randomUniform([K, N], -0.05, 0.05, 'float32', i);
    const weightT = tf.tensor2d(bf16ToF32(f32ToBf16(uniform.dataSync() as Float32Array)), [K, N]);
    uniform.dispose();
    const panels = {
      'f32 panels': packWeights(weightT, 'f32'),
      'bf16 panels': packWeights(weightT),
      'q8 panels': packWeights(weightT, 'q8'),
      'f32 panels in pairs': packWeights(weightT, 'f32', { paired: true }),
      'bf16 panels in pairs': packWeights(weightT, 'auto', { paired: true }),
    };
    if (!panels['f32 panels'] || !panels['bf16 panels']?.bf16 || panels['q8 panels']?.format !== 'q8' || !panels['f32 panels in pairs']?.paired || !panels['bf16 panels in pairs']?.paired) {
      throw new Error('the matmul kernel is not available on this backend');
    }
    return { K, weightT, panels: panels as Record<Panels, PackedWeights> };
  });
  const flops = (M: number) => SHAPES.reduce((s, [K, N]) => s + 2 * M * K * N, 0);
  const wasm = tf.backend() as unknown as WasmBackendInternals;
  const touch = (instantiateOnHeap(MATMUL_WASM, wasm) as Record<string, (from: number, bytes: number, sink: number) => void>)['touch'];
  const sink = tf.zeros([4]);
  /** Streams the panels with no arithmetic (their bytes, one load per cache line). */
  const read = (w: PackedWeights) => touch(heapOffset(wasm, w.panels as tf.Tensor), w.bytes, heapOffset(wasm, sink));
  const oneRow: string[] = [];
  console.log(`one-row tile of unpaired panels: ${PLAN.oneRowTile}\n`);
  console.log(`| M | tf.matMul | ${PANELS.map((p) => `kernel, ${p} | speed-up`).join(' | ')} |\n|---|---|${PANELS.map(() => '---|---|').join('')}`);
  for (const M of MS) {
    const xs = new Map([576, 1536].map((K) => [K, tf.randomNormal([M, K], 0, 1, 'float32', K) as tf.Tensor2D]));
    const x = (m: Matrix) => xs.get(m.K) as tf.Tensor2D;
    const variants: (() => void)[] = [
      () => matrices.forEach((m) => tf.matMul(x(m), m.weightT).dispose()),
      ...PANELS.map((p) => () => matrices.forEach((m) => (packedMatMul(x(m), m.panels[p], null, PLAN) as tf.Tensor).dispose())),
    ];
    const bytes = PANELS.map((p) => matrices.reduce((sum, m) => sum + m.panels[p].bytes, 0));
    if (M === 1) for (const p of PANELS) variants.push(() => matrices.forEach((m) => read(m.panels[p])));
    variants.forEach((run) => run()); // warm-up: XNNPACK packs each weight on its first use
    const times: number[][] = variants.map(() => []);
    for (let round = 0; round < ROUNDS; round++) variants.forEach((run, i) => times[i].push(timed(run)));
    const [tfjs, ...rest] = times.map(median);
    const [kernels, reads] = [rest.slice(0, PANELS.length), rest.slice(PANELS.length)];
    const cell = (ms: number) => `${ms.toFixed(1)} ms (${(flops(M) / ms / 1e6).toFixed(1)} GFLOP/s)`;
    console.log(`| ${M} | ${cell(tfjs)} | ${kernels.map((ms) => `${cell(ms)} | ${(tfjs / ms).toFixed(2)}x`).join(' | ')} |`);
    if (M === 1) {
      const rows = PANELS.map((p, i) => {
        const gbs = (t: number) => `${(bytes[i] / t / 1e6).toFixed(1)} GB/s`;
        return `| ${p} | ${(bytes[i] / 1e6).toFixed(0)} MB | ${reads[i].toFixed(1)} ms (${gbs(reads[i])}) | ${kernels[i].toFixed(1)} ms (${gbs(kernels[i])}) | ${((100 * reads[i]) / kernels[i]).toFixed(0)} % |`;
      });
      oneRow.push('| panels | bytes | read only | kernel, one row | of the read-only speed |', '|---|---|---|---|---|', ...rows);
    }
    tf.dispose([...xs.values()]);
  }
  if (oneRow.length) console.log(`\nOne row against reading the same bytes, medians of the same rounds:\n\n${oneRow.join('\n')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
