/**
 * What bounds the q8 one-row product (decode, batch 1): the matmul kernel's matmulQ8 for one
 * row, on a memory of its own (no tfjs), timed three ways in alternating rounds:
 *
 * - in cache: one 576x576 matrix (373 KB of q8 panels) multiplied PASSES times, in
 *   nanoseconds per weight: the arithmetic alone;
 * - streamed: every projection of a SmolLM2-135M-shaped model and its lm_head (151 MB of
 *   panels, far larger than any cache), one call per matrix (x quantized first, as the model
 *   does), without and with the kernel's read-ahead (section 5 of kernels/matmul.ts);
 * - read-only: one load per cache line over the same panels (the read-ahead loop alone),
 *   the memory bound of the streamed product.
 *
 *   npx tsx libs/engine/bench/q8-row.bench.ts                 (ROUNDS, PASSES)
 *
 * COUNT=n runs the in-cache product n times and nothing else, untimed, for instruction
 * counts: the difference between two counts over the difference in n, divided by the 331,776
 * weights, is the kernel's instructions per weight (on x86-64, with V8's optimizing compiler
 * from the start):
 *
 *   COUNT=1 valgrind --tool=callgrind node --no-liftoff --single-threaded --import tsx libs/engine/bench/q8-row.bench.ts
 *   COUNT=2001 valgrind --tool=callgrind node --no-liftoff --single-threaded --import tsx libs/engine/bench/q8-row.bench.ts
 */
import { MATMUL_WASM } from '../src/kernels/matmul.wasm';
import { instantiateOnOwnMemory } from '../src/kernels/wasm-heap';

const ROUNDS = Number(process.env['ROUNDS'] ?? 15);
const PASSES = Number(process.env['PASSES'] ?? 200);
const COUNT = process.env['COUNT'] === undefined ? 0 : Number(process.env['COUNT']);

const SHAPES: [number, number][] = [
  ...Array.from({ length: 30 }, (): [number, number][] => [
    [576, 960],
    [576, 576],
    [576, 3072],
    [1536, 576],
  ]).flat(),
  [576, 49152],
];
const CACHED: [number, number] = [576, 576];

interface Kernels {
  packQ8(w: number, packed: number, K: number, N: number): void;
  quantizeRows(x: number, xq: number, M: number, K: number): void;
  matmulQ8(x: number, packed: number, bias: number, out: number, M: number, K: number, N: number, readAhead: number, oneRowWide: number, xt: number, panelFrom: number, panelTo: number): void;
  touch(from: number, bytes: number, sink: number): void;
}

/** Bytes of q8 panels for a K x N weight: 288 per block of 32 x 8. */
const panelBytes = ([K, N]: [number, number]) => (K / 32) * (N / 8) * 288;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function main(): void {
  const largest = Math.max(...SHAPES.map(([K, N]) => K * N));
  const streamed = COUNT ? 0 : SHAPES.reduce((sum, shape) => sum + panelBytes(shape), 0);
  const scratch = 1 << 20;
  const bytes = largest * 4 + streamed + panelBytes(CACHED) + 3 * scratch;
  const { exports, memory } = instantiateOnOwnMemory(MATMUL_WASM, Math.ceil(bytes / 65536) + 1);
  const kernels = exports as unknown as Kernels;
  const f32 = new Float32Array(memory.buffer);
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32 - 0.5;
  for (let i = 0; i < largest; i++) f32[i] = random();

  // Each matrix is packed from the same random source (its first K x N values): distinct
  // panels at distinct addresses, which is what streaming needs.
  let at = largest * 4;
  const matrices = COUNT ? [] : SHAPES.map(([K, N]) => {
    kernels.packQ8(0, at, K, N);
    const m = { K, N, at };
    at += panelBytes([K, N]);
    return m;
  });
  const cached = { K: CACHED[0], N: CACHED[1], at };
  kernels.packQ8(0, at, cached.K, cached.N);
  at += panelBytes(CACHED);
  const x = at;
  const xt = x + scratch;
  const out = xt + scratch;
  for (let i = 0; i < 1536; i++) f32[x / 4 + i] = random();

  const product = (m: { K: number; N: number; at: number }, readAhead: number) => {
    kernels.quantizeRows(x, xt, 1, m.K);
    kernels.matmulQ8(x, m.at, 0, out, 1, m.K, m.N, readAhead, 0, xt, 0, m.N / 8);
  };
  if (COUNT) {
    for (let i = 0; i < COUNT; i++) product(cached, 0);
    return;
  }
  const timed = (run: () => void) => {
    const t0 = performance.now();
    run();
    return performance.now() - t0;
  };
  const cases: [string, () => void][] = [
    ['in cache', () => { for (let i = 0; i < PASSES; i++) product(cached, 0); }],
    ['streamed', () => matrices.forEach((m) => product(m, 0))],
    ['streamed, read-ahead', () => matrices.forEach((m) => product(m, 1))],
    ['read-only', () => kernels.touch(largest * 4, streamed, out)],
  ];
  const times = cases.map(() => [] as number[]);
  for (let r = 0; r < ROUNDS; r++) cases.forEach(([, run], i) => times[i].push(timed(run)));
  const [cache, plain, ahead, read] = times.map(median);
  const weights = SHAPES.reduce((sum, [K, N]) => sum + K * N, 0);
  console.log(`q8 one-row product, medians of ${ROUNDS} alternating rounds`);
  console.log(`in cache (576x576, ${PASSES} products): ${((cache * 1e6) / (PASSES * cached.K * cached.N)).toFixed(4)} ns per weight (${((cache * 1e6 * weights) / (PASSES * cached.K * cached.N) / 1e6).toFixed(1)} ms for the model's ${(weights / 1e6).toFixed(0)} M weights)`);
  console.log(`streamed (${(streamed / 1e6).toFixed(1)} MB of panels): ${plain.toFixed(2)} ms without read-ahead, ${ahead.toFixed(2)} ms with it`);
  console.log(`read-only pass over the same panels: ${read.toFixed(2)} ms (${(streamed / read / 1e6).toFixed(1)} GB/s)`);
}

main();
