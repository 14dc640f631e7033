/**
 * The ceiling of the engine's arithmetic on this core: WebAssembly SIMD is 128 bits wide, so a
 * fused multiply-add does 4 of them at once, where native code on the same core may use AVX2's
 * 8 or AVX-512's 16. Times, on one thread:
 *
 *   - the kernel's fmaPeak (libs/engine/assembly/matmul.ts): 12 independent chains of
 *     f32x4.relaxed_madd and nothing else, the most FLOP/s any tile can reach here;
 *   - the packed kernel's 4 x 8 tile (f32 panels, fused, as training and prefill run it) over
 *     a 576 x 1536 matrix in cache at 64 rows, a training step's gate|up shape: how close the
 *     real tiles come to that peak;
 *
 * and gives what the peak bounds on the bench model (SmolLM2-135M's shape): the fastest a
 * 128-token prefill and a 64-token LoRA step's big products (train.bench.ts's FLOP count) could
 * run on one thread if nothing but those products took any time.
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/simd-ceiling.bench.ts   (ROUNDS=7)
 *
 * PyTorch's rate for the same product on the same core: torch_peer.py with "matmul" in its plan
 * (docs/benchmarks.md, "Training step").
 */
import * as os from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { MATMUL_WASM } from '../src/kernels/matmul.wasm';
import { instantiateOnOwnMemory } from '../src/kernels/wasm-heap';

setFlagsFromString('--experimental-wasm-relaxed-simd');

const ROUNDS = Number(process.env['ROUNDS'] ?? 7);
const PEAK_STEPS = 20_000_000;
const [M, K, N] = [64, 576, 1536];
const PRODUCTS = 40;

/** SmolLM2-135M's projections per token (30 layers of q|k|v, o, gate|up, down) and its lm_head, in weights. */
const PROJECTION_WEIGHTS = 30 * (576 * 960 + 576 * 576 + 576 * 3072 + 1536 * 576);
const LM_HEAD_WEIGHTS = 576 * 49152;
/** A 128-token prefill: every projection for every token, the lm_head for the last one. */
const PREFILL_FLOP = 2 * (128 * PROJECTION_WEIGHTS + LM_HEAD_WEIGHTS);
/** A 64-token LoRA step (48 trained tokens): forward and input gradient through every frozen weight (train.bench.ts). */
const TRAIN_FLOP = 4 * (64 * PROJECTION_WEIGHTS + 48 * LM_HEAD_WEIGHTS);

interface Kernels {
  fmaPeak(steps: number, seed: number): number;
  pack(w: number, packed: number, K: number, N: number, bf16: number, paired: number): void;
  interleaveRows(x: number, xt: number, M: number, K: number): void;
  matmulF32Fused(x: number, packed: number, bias: number, out: number, M: number, K: number, N: number, readAhead: number, oneRowWide: number, xt: number, panelFrom: number, panelTo: number): void;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** GFLOP/s of `flop` floating-point operations done by `run`. */
function rate(flop: number, run: () => void): number {
  const t0 = process.hrtime.bigint();
  run();
  return flop / Number(process.hrtime.bigint() - t0);
}

function main(): void {
  // Layout on the module's own memory: w [K, N], its panels, x [M, K], x interleaved, out [M, N].
  const floats = [K * N, K * N, M * K, M * K, M * N];
  const at: number[] = [];
  let end = 0;
  for (const n of floats) {
    at.push(end);
    end += n * 4;
  }
  const { exports, memory } = instantiateOnOwnMemory(MATMUL_WASM, Math.ceil(end / 65536) + 1);
  const kernels = exports as unknown as Kernels;
  const [w, packed, x, xt, out] = at;
  const f32 = new Float32Array(memory.buffer);
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32 - 0.5;
  for (let i = 0; i < K * N; i++) f32[w / 4 + i] = random();
  for (let i = 0; i < M * K; i++) f32[x / 4 + i] = random();
  kernels.pack(w, packed, K, N, 0, 0);

  const peak: number[] = [];
  const tile: number[] = [];
  kernels.fmaPeak(PEAK_STEPS / 10, 1);
  for (let round = 0; round < ROUNDS; round++) {
    peak.push(rate(PEAK_STEPS * 12 * 8, () => kernels.fmaPeak(PEAK_STEPS, 1)));
    tile.push(
      rate(PRODUCTS * 2 * M * K * N, () => {
        for (let i = 0; i < PRODUCTS; i++) {
          kernels.interleaveRows(x, xt, M, K);
          kernels.matmulF32Fused(x, packed, 0, out, M, K, N, 0, 0, xt, 0, N / 8);
        }
      }),
    );
  }
  const best = Math.max(...peak);
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`${cpu}, ${os.cpus().length} cores, Node ${process.version}; ${ROUNDS} rounds, one thread, load average ${os.loadavg()[0].toFixed(2)}\n`);
  console.log('| figure | median | best |\n|---|---|---|');
  console.log(`| 128-bit fused multiply-add peak (12 chains, no memory) | ${median(peak).toFixed(1)} GFLOP/s | ${best.toFixed(1)} GFLOP/s |`);
  console.log(`| packed kernel, 4 x 8 tile, ${M} x ${K} x ${N} in cache | ${median(tile).toFixed(1)} GFLOP/s (${((100 * median(tile)) / best).toFixed(0)} % of the peak) | ${Math.max(...tile).toFixed(1)} GFLOP/s |`);
  console.log(`| 128-token prefill if its products ran at the peak (${(PREFILL_FLOP / 1e9).toFixed(1)} GFLOP) | ${((128 * best * 1e9) / PREFILL_FLOP).toFixed(0)} tokens/s | |`);
  console.log(`| a 64-token LoRA step's big products at the peak (${(TRAIN_FLOP / 1e9).toFixed(1)} GFLOP) | ${(TRAIN_FLOP / (best * 1e9)).toFixed(2)} s | |`);
}

main();
