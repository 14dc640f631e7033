/**
 * The tiled products of a LoRA SFT step on webgpu alone (kernels/tiled-product.wgsl.ts, through
 * frozen-linear.webgpu.ts's programs, whose tiles the LoRA programs' products share): for each
 * projection of the GPU bench's shapes over a step's rows, the forward y = x W and the input
 * gradient dx = dy W^T, and the lm_head's forward over the step's scored positions, in each of the
 * f32 tiles (32, 64 and 128 a side), beside the tile productTiling chooses by the product's size,
 * and in 64- and 128-tiles with the inner dimension split among workgroups (frozenLinear's
 * `split`: where the grid would be short of work, in up to 8 splits, added by a second dispatch),
 * and in each tile again with each step's operands loaded a step ahead, during the step before
 * (setProductPrefetch). Which tile is fastest for which grid is what productTiling's thresholds
 * (NARROW_TILE_WORKGROUPS, WIDE_TILE_WORKGROUPS) stand for; whether a split wider tile beats the
 * 32-tile's grid is whether a training step's products should split (setProductSplits, which
 * the LoRA programs follow as the frozen ones do); the prefetched columns say whether the tiles should prefetch: on a GPU this table
 * answers all three. Each figure is one product's time, from `--reps` of them dispatched together
 * (from the first dispatch to the queue's work done), the median over `--runs` after one untimed
 * run; GFLOP/s counts 2 M K N. Weights are held as the GPU bench's models hold them (the 1.5B and
 * 3B shapes in 16 bits, unpacked as they are staged). On lavapipe the times are a CPU's, for
 * comparing the programs between GPU draws.
 *
 *   npx tsx tools/bench/gpu/products.bench.ts [--only smollm2-135m,qwen2.5-0.5b,qwen2.5-1.5b,qwen2.5-3b] [--rows 4] [--tokens 256] [--runs 5] [--reps 10] [--smoke]
 *
 * Without --only, the default shapes (smollm2-135m, qwen2.5-0.5b); --smoke: the tiny ones,
 * over 2 rows of 16 tokens, one run of two products.
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../../../libs/engine/src/backend';
import { halfPairs } from '../../../libs/engine/src/dtype';
import { headChunkSize } from '../../../libs/engine/src/training/checkpointing';
import { frozenLinear, frozenLinearTransposed, GpuWeight } from '../../../libs/engine/src/kernels/frozen-linear.webgpu';
import { PRODUCT_TILES, ProductTile, setProductPrefetch, setProductTiles, trainingTiling } from '../../../libs/engine/src/kernels/tiled-product.wgsl';
import { BENCH_SHAPES, BenchShape, benchShapes, configOf, LARGE_BENCH_SHAPES } from './bench-model';
import { Flushing, median, option, timed } from './bench-steps';

/** One product of a step: y [M, N] = x [M, K] W, or (`transposed`) dx [M, K] = dy [M, N] W^T. */
interface Product {
  name: string;
  M: number;
  K: number;
  N: number;
  transposed: boolean;
}

/** A step's products for `shape` over `rows` x `tokens` tokens: each projection both ways, then the lm_head's forward over a chunk of the scored positions. */
function productsOf(shape: BenchShape, rows: number, tokens: number): Product[] {
  const c = configOf(shape);
  const D = c.headDim ?? c.hiddenSize / c.numHeads;
  const M = rows * tokens;
  const projections: [string, number, number][] = [
    ['q\\|k\\|v', c.hiddenSize, (c.numHeads + 2 * c.numKvHeads) * D],
    ['o', c.numHeads * D, c.hiddenSize],
    ['gate\\|up', c.hiddenSize, 2 * c.intermediateSize],
    ['down', c.intermediateSize, c.hiddenSize],
  ];
  return [
    ...projections.flatMap(([name, K, N]) => [
      { name: `${name} forward`, M, K, N, transposed: false },
      { name: `${name} input gradient`, M, K, N, transposed: true },
    ]),
    // Every position but each row's last is scored, in chunks whose logits a storage binding holds, as the step takes them.
    { name: 'lm_head forward', M: headChunkSize(rows * (tokens - 1), c.vocabSize), K: c.hiddenSize, N: c.vocabSize, transposed: false },
  ];
}

/** Values in [-0.05, 0.05) from a fixed sequence: a weight of hundreds of millions is made in a second, where tf.randomNormal on the host takes many. */
function weightValues(count: number): Float32Array {
  const values = new Float32Array(count);
  for (let i = 0; i < count; i++) values[i] = (((i * 2654435761) >>> 0) % 1000) / 10000 - 0.05;
  return values;
}

/** W [K, N] as the shape's model holds it on webgpu: f32, or its bf16 values in pairs. */
function heldWeight(shape: BenchShape, K: number, N: number): GpuWeight {
  const values = weightValues(K * N);
  return shape.dtype === 'BF16' ? { pairs: tf.tensor2d(halfPairs(values, 'BF16'), [K, N / 2], 'int32'), dtype: 'BF16' } : tf.tensor2d(values, [K, N]);
}

/** How a product is run: in one tile, its inner dimension split or not, each step's operands loaded a step ahead or not (setProductPrefetch). */
interface Tiling {
  tile: ProductTile;
  split: boolean;
  prefetch: boolean;
}

/** The tilings each product is timed in: every f32 tile, then the 64- and 128-tiles split, then every f32 tile prefetched. */
const TILINGS: Tiling[] = [
  ...PRODUCT_TILES.map((tile) => ({ tile, split: false, prefetch: false })),
  ...([64, 128] as const).map((tile) => ({ tile, split: true, prefetch: false })),
  ...PRODUCT_TILES.map((tile) => ({ tile, split: false, prefetch: true })),
];

const tilingName = ({ tile, split, prefetch }: Tiling) => `${tile} x ${tile}${split ? ', split' : ''}${prefetch ? ', prefetched' : ''}`;

/** One product, split or not, disposed. */
function runProduct(p: Product, x: tf.Tensor2D, weight: GpuWeight, split: boolean): void {
  (p.transposed ? frozenLinearTransposed(x, weight, split) : frozenLinear(x, weight, null, split)).dispose();
}

/** How `p` runs in the tiles set now (setProductTiles): its tile and splits. The input gradient's output is [M, K] over N: its grid covers K. */
function tilingOf(p: Product, split: boolean): { tile: ProductTile; splits: number } {
  const [cols, inner] = p.transposed ? [p.K, p.N] : [p.N, p.K];
  const { tiling, splits } = trainingTiling(p.M, cols, inner, 0, Infinity, split);
  return { tile: tiling.tile, splits };
}

/**
 * Milliseconds of one product in `tiling`: the median over `runs` of `reps` products timed
 * together, after one untimed run; and the splits it took. Throws where the device refused any of it.
 */
async function productMs(backend: Flushing, p: Product, x: tf.Tensor2D, weight: GpuWeight, { tile, split, prefetch }: Tiling, runs: number, reps: number): Promise<{ ms: number; splits: number }> {
  setProductTiles(tile);
  setProductPrefetch(prefetch);
  backend.device.pushErrorScope('validation');
  try {
    const times: number[] = [];
    for (let r = 0; r <= runs; r++) {
      const ms = await timed(backend, () => {
        for (let i = 0; i < reps; i++) runProduct(p, x, weight, split);
      });
      if (r > 0) times.push(ms / reps);
    }
    const error = await backend.device.popErrorScope();
    if (error) throw new Error(`${p.name} in ${tilingName({ tile, split, prefetch })} tiles: ${error.message}`);
    return { ms: median(times), splits: tilingOf(p, split).splits };
  } finally {
    setProductTiles('auto');
    setProductPrefetch(false);
  }
}

async function main(): Promise<void> {
  const smoke = process.argv.includes('--smoke');
  const rows = Number(option('--rows', smoke ? '2' : '4'));
  const tokens = Number(option('--tokens', smoke ? '16' : '256'));
  const runs = Number(option('--runs', smoke ? '1' : '5'));
  const reps = Number(option('--reps', smoke ? '2' : '10'));
  const named = option('--only', '');
  const shapes = benchShapes(smoke, named ? named.split(',') : undefined);
  if (shapes.length === 0) throw new Error(`--only ${named}: none of ${[...BENCH_SHAPES, ...LARGE_BENCH_SHAPES].map((s) => s.name).join(', ')}`);
  const info = await selectBackend('webgpu');
  if (info.name !== 'webgpu') throw new Error(`webgpu is not available here (got ${info.name})`);
  const backend = tf.backend() as unknown as Flushing;
  console.log(`${rows} rows of ${tokens} tokens; each product's ms (GFLOP/s), one of ${reps} dispatched together, medians of ${runs} runs; adapter ${JSON.stringify(info.adapter ?? null)}`);
  for (const shape of shapes) {
    console.log(`\n${shape.name} (weights ${shape.dtype ?? 'F32'})\n`);
    console.log(`| product | M x K x N | by its size | ${TILINGS.map(tilingName).join(' | ')} |`);
    console.log(`|---|---|---|${TILINGS.map(() => '---').join('|')}|`);
    for (const p of productsOf(shape, rows, tokens)) {
      const weight = heldWeight(shape, p.K, p.N);
      const x = tf.tensor2d(weightValues(p.M * (p.transposed ? p.N : p.K)), [p.M, p.transposed ? p.N : p.K]);
      const auto = tilingOf(p, false).tile;
      const cells: string[] = [];
      for (const tiling of TILINGS) {
        const { ms, splits } = await productMs(backend, p, x, weight, tiling, runs, reps);
        const gflops = (2 * p.M * p.K * p.N) / 1e6 / ms;
        cells.push(`${ms.toFixed(3)} (${gflops >= 100 ? gflops.toFixed(0) : gflops.toPrecision(2)}${tiling.split ? `, ${splits === 1 ? 'unsplit' : `${splits} splits`}` : ''})`);
      }
      console.log(`| ${p.name} | ${p.M} x ${p.K} x ${p.N} | ${auto} | ${cells.join(' | ')} |`);
      tf.dispose([x, 'pairs' in weight ? weight.pairs : weight]);
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
