/**
 * The tiled product the webgpu projections share (kernels/lora.webgpu.ts's training products,
 * kernels/frozen-linear.webgpu.ts's frozen ones): a workgroup a square block of the output, in
 * one of three sizes (productTiling chooses).
 */

/** Threads a workgroup (16 x 16), each computing a (tile / 16) x (tile / 16) block of its tile. */
const SIDE = 16;
const THREADS = SIDE * SIDE;
/** The inner dimension a step: both operands' DEPTH x tile slices are staged in workgroup memory. */
const DEPTH = 16;
/** Row tiles a group walks together (groupedTile). */
const GROUP = 8;

/**
 * The tiles' sides: 32 (2 x 2 outputs a thread), 64 (4 x 4) and 128 (8 x 8). A larger tile
 * reads each staged value into more multiply-adds (the 128-tile 64 for four vec4 loads, the
 * 64-tile 16 for two, the 32-tile 4 for two vec2s) and each operand from memory less often, but
 * makes a quarter as many workgroups as the next smaller: the 128-tile pays where the product
 * still has enough of them to fill a large GPU several times over, the 32-tile where 64-tiles
 * would leave most of its multiprocessors with one workgroup or none (SmolLM2-135M's o and down
 * products over a 4 x 256-token step: 144 tiles of 64).
 */
export const PRODUCT_TILES = [32, 64, 128] as const;
/** A tile's side, or 'matrix': 64 x 64 tiles multiplied in subgroup matrices (matrixProduct). */
export type ProductTile = (typeof PRODUCT_TILES)[number] | 'matrix';

/**
 * The subgroup matrices the device's tensor cores take (Dawn's chromium-experimental-subgroup-matrix:
 * cooperative matrices on Vulkan): f16 operands, f32 results, a left of M x K, a right of K x N,
 * each multiply-accumulate run by one subgroup of `subgroupSize` invocations (the device's only
 * subgroup size). Null: products run on the tiles of PRODUCT_TILES.
 */
export interface SubgroupMatrices {
  M: number;
  N: number;
  K: number;
  subgroupSize: number;
}

let subgroupMatrices: SubgroupMatrices | null = null;

/** Sets the subgroup matrices products may take from now on (webgpu.ts, once the device has them); null: none. */
export function useSubgroupMatrices(shape: SubgroupMatrices | null): void {
  if (shape && !matrixTileFits(shape)) throw new Error(`subgroup matrices of ${shape.M} x ${shape.N} x ${shape.K} by ${shape.subgroupSize} do not fit the 64 x 64 matrix tile`);
  subgroupMatrices = shape;
  tilingChanged();
}

/**
 * Names what productTiling and tiledProduct follow now (setProductTiles, useSubgroupMatrices):
 * a program kept between calls (keptPrograms) holds its tile, so its key takes this.
 */
export function productTilingKey(): string {
  return tilingKey;
}
let tilingKey = 'auto';
function tilingChanged(): void {
  const m = subgroupMatrices;
  tilingKey = `${tileChoice}${m ? `_matrix${m.M}x${m.N}x${m.K}x${m.subgroupSize}` : ''}${prefetch ? '_prefetch' : ''}${splitProducts ? '_split' : ''}`;
}

let prefetch = false;
let splitProducts = false;

/**
 * Sets whether the f32 tiles' products made from now on load each step's operands a step ahead
 * (f32Walk): off unless a bench sets it, which measures both (products.bench.ts).
 */
export function setProductPrefetch(on: boolean): void {
  prefetch = on;
  tilingChanged();
}

/**
 * Sets whether a training step's products made from now on (kernels/frozen-linear.webgpu.ts's
 * and kernels/lora.webgpu.ts's) split their inner dimension among workgroups (trainingTiling):
 * off unless a bench sets it, which measures both (gpu.bench.ts, products.bench.ts).
 */
export function setProductSplits(on: boolean): void {
  splitProducts = on;
  tilingChanged();
}

/** Whether a training step's products split their inner dimension (setProductSplits). */
export function productSplits(): boolean {
  return splitProducts;
}

/** What names a tile's program among those of the same shapes: its tile, and whether it prefetches (setProductPrefetch; the matrix tile never does). */
export function tileKey(tile: ProductTile): string {
  return tile !== 'matrix' && prefetch ? `${tile}_prefetch` : String(tile);
}

/** The subgroup matrices products take, or null. */
export function usedSubgroupMatrices(): SubgroupMatrices | null {
  return subgroupMatrices;
}

/** Workgroups of 128-tiles from which a product takes them: two full waves of a 132-multiprocessor card at two workgroups each, and more. */
const WIDE_TILE_WORKGROUPS = 512;
/** Workgroups of 64-tiles under which a product takes 32-tiles: two for each multiprocessor of a 132-multiprocessor card. */
const NARROW_TILE_WORKGROUPS = 264;

/** Which tiles productTiling gives: by the product's size ('auto'), or always one. */
export type ProductTileChoice = 'auto' | ProductTile;

let tileChoice: ProductTileChoice = 'auto';

/** Sets the tiles every product made from now on takes (benches measure each; the default is 'auto'). */
export function setProductTiles(choice: ProductTileChoice): void {
  tileChoice = choice;
  tilingChanged();
}

/** How a product [rows, cols] runs: its tile's side, and the grid (column tiles, row tiles) that covers it. */
export interface ProductTiling {
  tile: ProductTile;
  dispatch: [number, number, number];
}

/**
 * The tiles and grid of a product [rows, cols] (with `extraWorkgroups` of other work after its
 * own, ExtraWork): those a bench set (setProductTiles), the matrix tile where products take
 * subgroup matrices, else by the product's size: 128 where its 128-tiles still make WIDE_TILE_WORKGROUPS
 * workgroups, 32 where its 64-tiles make fewer than NARROW_TILE_WORKGROUPS, else 64. A tile
 * whose workgroup memory (tileMemory) passes `memory`, what the program has for the product
 * (the device's, less what it declares beside the product), gives way to the widest f32 tile
 * within it: the 128-tile fills WebGPU's default 16 KB alone.
 */
export function productTiling(rows: number, cols: number, extraWorkgroups = 0, memory = Infinity): ProductTiling {
  const [narrow, middle, wide] = PRODUCT_TILES;
  const grid = (side: number) => Math.ceil(cols / side) * Math.ceil(rows / side);
  const matrix = subgroupMatrices !== null;
  const choice = tileChoice === 'matrix' && !matrix ? 'auto' : tileChoice;
  const bySize = grid(wide) >= WIDE_TILE_WORKGROUPS ? wide : grid(middle) < NARROW_TILE_WORKGROUPS ? narrow : middle;
  const chosen: ProductTile = choice !== 'auto' ? choice : matrix ? 'matrix' : bySize;
  const tile = withinMemory(chosen, memory);
  const side = tileSide(tile);
  const columns = Math.ceil(cols / side);
  // The extra workgroups (ExtraWork) in rows of the grid after the product's.
  return { tile, dispatch: [columns, Math.ceil(rows / side) + Math.ceil(extraWorkgroups / columns), 1] };
}

/** The f32 tiles whose workgroup memory is within `memory`, widest first. */
const tilesWithin = (memory: number): ProductTile[] => [...PRODUCT_TILES].reverse().filter((tile) => tileMemory(tile) <= memory);

/** `tile` where its workgroup memory is within `memory`, else the widest f32 tile that is (the narrow one where none is). */
function withinMemory(tile: ProductTile, memory: number): ProductTile {
  return tileMemory(tile) <= memory ? tile : (tilesWithin(memory)[0] ?? PRODUCT_TILES[0]);
}

/** How far a product's inner dimension may be split among the grid's z (splitProductTiling). */
export interface InnerSplits {
  /** Workgroups the splits aim for: the inner dimension is split in two while the grid stays within this. */
  target: number;
  /** Fewest of the inner dimension a split walks, and most splits (a power of two). */
  fewestInner: number;
  most: number;
}

/**
 * The f32 tiles and grid of a product [rows, cols] whose inner dimension (`inner`) may be split
 * among the grid's z, each split's sums added by a program after it, never the matrix tile (f16
 * operands keep fewer bits of values under 6e-5 and flush those under 6e-8 to zero, which a
 * product of a softmax's small gradients cannot take): the widest tile whose
 * workgroups, split (`limits`), make at least NARROW_TILE_WORKGROUPS, else the tile that makes
 * the most (the splits in `dispatch[2]`). Where splitting fills the GPU, a wider tile reads each
 * staged value into more multiply-adds (PRODUCT_TILES) for the price of the splits' sums: the
 * lm_head's input gradient, [positions, hidden] over a vocabulary of tens of thousands, makes
 * 40 128-tiles for 1,016 positions of SmolLM2-135M's 576 columns, 320 workgroups split 8 ways,
 * where unsplit only the 32-tile's 576 fill the card, at a quarter of the multiply-adds a
 * staged value. A tile a bench set (setProductTiles) is kept, and only split. `extraWorkgroups`
 * and `memory` as productTiling's: the extra work's rows follow the product's in each split's
 * layer of the grid, and only tiles within `memory` are taken.
 */
export function splitProductTiling(rows: number, cols: number, inner: number, limits: InnerSplits, extraWorkgroups = 0, memory = Infinity): ProductTiling {
  const within = tilesWithin(memory);
  const tiles: ProductTile[] = tileChoice !== 'auto' && tileChoice !== 'matrix' ? [withinMemory(tileChoice, memory)] : within.length > 0 ? within : [PRODUCT_TILES[0]];
  let most: { tiling: ProductTiling; workgroups: number } | null = null;
  for (const tile of tiles) {
    const side = tileSide(tile);
    const [columns, rowTiles] = [Math.ceil(cols / side), Math.ceil(rows / side)];
    let splits = 1;
    while (splits < limits.most && columns * rowTiles * splits * 2 <= limits.target && inner / (splits * 2) >= limits.fewestInner) splits *= 2;
    const tiling: ProductTiling = { tile, dispatch: [columns, rowTiles + Math.ceil(extraWorkgroups / columns), splits] };
    const workgroups = columns * rowTiles * splits;
    if (workgroups >= NARROW_TILE_WORKGROUPS) return tiling;
    if (!most || workgroups > most.workgroups) most = { tiling, workgroups };
  }
  return (most as { tiling: ProductTiling }).tiling;
}

/**
 * How a training step's products split their inner dimension where they do (setProductSplits):
 * in two while the grid stays within 512 workgroups and each split walks at least 128 of it
 * (eight steps of a tile's staging), into at most 8.
 */
export const PRODUCT_SPLITS: InnerSplits = { target: 512, fewestInner: 128, most: 8 };

/**
 * The tiles, grid and splits of a training step's product [rows, cols] over `inner`, with
 * `extraWorkgroups` and `memory` as productTiling's: split by PRODUCT_SPLITS where `split`
 * (setProductSplits by default), else productTiling's unsplit.
 */
export function trainingTiling(rows: number, cols: number, inner: number, extraWorkgroups = 0, memory = Infinity, split = splitProducts): SplitTiling {
  const tiling = split ? splitProductTiling(rows, cols, inner, PRODUCT_SPLITS, extraWorkgroups, memory) : productTiling(rows, cols, extraWorkgroups, memory);
  return withSplits(tiling, inner);
}

/** A product's tiling with its splits of the inner dimension (the grid's z) and the depth each walks (tiledProduct's splitDepth: null unsplit). */
export interface SplitTiling {
  tiling: ProductTiling;
  splits: number;
  splitDepth: number | null;
}

/** splitProductTiling's tiles, grid and splits for a product [rows, cols] over `inner`, as SplitTiling. */
export function splitTiling(rows: number, cols: number, inner: number, limits: InnerSplits): SplitTiling {
  return withSplits(splitProductTiling(rows, cols, inner, limits), inner);
}

/**
 * `tiling` as SplitTiling, its splits those of its grid's z over `inner`: each walks its share
 * rounded up to SPLIT_DEPTH, so that the last may walk less, or none.
 */
export function withSplits(tiling: ProductTiling, inner: number): SplitTiling {
  const splits = tiling.dispatch[2];
  return { tiling, splits, splitDepth: splits === 1 ? null : Math.ceil(inner / splits / SPLIT_DEPTH) * SPLIT_DEPTH };
}

/** A product's output [rows, cols], or with splits over 1 their partial sums [splits, rows, cols] (productStore's layout). */
export function productShape(splits: number, rows: number, cols: number): number[] {
  return splits === 1 ? [rows, cols] : [splits, rows, cols];
}

/**
 * tiledProduct's `store` into `out`, [M, cols] row-major (the program's uniform `u.M`); with
 * `splits` over 1, into the workgroup's split's slice of [splits, M, cols] (wg.z's), which a
 * program after it adds up (kernels/split-sums.webgpu.ts).
 */
export function productStore(out: string, cols: number, splits: number): (row: string, col: string, value: string) => string {
  const slice = splits === 1 ? '' : `wg.z * u.M * ${cols}u + `;
  return (row, col, value) => `${out}[${slice}${row} * ${cols}u + ${col}] = ${value};`;
}

/**
 * The workgroup memory a tile's product declares, in bytes: both operands' staged slices (DEPTH
 * steps of the tile's rows and columns in f32; the matrix tile's in f16, with a block of results
 * for each of its subgroups).
 */
export function tileMemory(tile: ProductTile): number {
  if (tile !== 'matrix') return 2 * DEPTH * tile * 4;
  const blocks = subgroupMatrices ? (THREADS / subgroupMatrices.subgroupSize) * subgroupMatrices.M * subgroupMatrices.N * 4 : 0;
  return 2 * MATRIX_TILE * MATRIX_DEPTH * 2 + blocks;
}

/** The side of a tile's square of outputs. */
const tileSide = (tile: ProductTile) => (tile === 'matrix' ? MATRIX_TILE : tile);

/**
 * The tile (row, column) of the workgroup at `flat` in the order the GPU starts them (x
 * fastest) among the product's `columns` x `rows` tiles, rather than from its grid coordinates
 * directly: taken in groups of GROUP row tiles, the order walks down a group's row tiles of one
 * column tile before the next column tile. The GROUP workgroups that read a column tile of the
 * right operand (a weight, the large operand) then run together and share its loads from cache,
 * and a group's rows of the left stay in cache while it walks the columns; in grid order every
 * row tile would read the whole weight again, from memory once the weight outgrows the cache.
 */
const groupedTile = `fn groupedTile(flat : u32, columns : u32, rowTiles : u32) -> vec2<u32> {
  let perGroup = ${GROUP}u * columns;
  let first = (flat / perGroup) * ${GROUP}u;
  let rows = min(rowTiles - first, ${GROUP}u);
  let within = flat % perGroup;
  return vec2<u32>(first + within % rows, within / rows);
}`;

/**
 * Work that reads nothing the product writes, nor writes what it reads, run in the product's
 * dispatch, a dispatch fewer where they would be two: in workgroups the caller's grid adds after
 * the product's (productTiling's `extraWorkgroups`; `body` skips what is past its end), WGSL with
 * `extra`, the workgroup's index among them, and `tid`, the thread's among the workgroup's 256.
 * In a product split along its inner dimension, each split's layer of the grid has them: the
 * first's do the work, or with `everySplit` each layer's, its split `wg.z`.
 */
export interface ExtraWork {
  body: string;
  everySplit?: boolean;
}

/**
 * The opening of a product's `main` (workgroups of 256, `tid` the invocation's index): the
 * workgroups of the extra work, if any, do it (`split`: those of the grid's first layer, or
 * each layer's with everySplit) and return; every other takes its tile's origin, `row0` and
 * `col0`, in groupedTile's order.
 */
function tileOrigin(side: number, extra: ExtraWork | null, split: boolean): string {
  return `  let flat = wg.y * grid.x + wg.x;
  let rowTiles = (u.M + ${side - 1}u) / ${side}u;
${
  extra
    ? `  // The extra work's workgroups, after the product's (the same for the whole workgroup, so its barriers are too)${split && !extra.everySplit ? ', in the first split\'s layer of the grid only' : ''}.
  if (flat >= grid.x * rowTiles) {
    let extra = flat - grid.x * rowTiles;
${split && !extra.everySplit ? `    if (wg.z == 0u) {\n${extra.body}\n    }` : extra.body}
    return;
  }`
    : ''
}
  let at = groupedTile(flat, grid.x, rowTiles);
  let row0 = at.x * ${side}u;
  let col0 = at.y * ${side}u;`;
}

/**
 * Which part of staging a step stagedLoads writes: all of it (load each value and store it into
 * workgroup memory), or, for a prefetched product (setProductPrefetch), either loading the step
 * at `kn` into the registers nl and nr ('load'), or storing those into workgroup memory ('store').
 */
type StagingPart = 'whole' | 'load' | 'store';

/**
 * The loads that stage one step of `depth` of both operands for a tile of `side`: each of the
 * 256 invocations loads side x depth / 256 values of each, neighbouring invocations reading
 * neighbouring floats (zero past the product's edges); `storeLeft` puts `lv`, the left's row
 * row0 + r and step k0 + kl (`leftAt`), and `storeRight` puts `rv`, the right's step k0 + kk
 * and tile column c, into workgroup memory. `part` splits the loads from the stores (StagingPart).
 */
function stagedLoads(
  side: number,
  depth: number,
  inner: number,
  cols: number,
  leftAt: (row: string, k: string) => string,
  rightAt: (k: string, c: string) => string,
  rightRowMajor: boolean,
  storeLeft: string,
  storeRight: string,
  part: StagingPart = 'whole',
): string {
  const k = part === 'load' ? 'kn' : 'k0';
  const loads = `var lv = 0.0;
      if (row0 + r < u.M && ${k} + kl < ${inner}u) { lv = ${leftAt('(row0 + r)', `(${k} + kl)`)}; }
      let kr = ${k} + kk;
      var rv = 0.0;
      if (kr < ${inner}u && col0 + c < ${cols}u) { rv = ${rightAt('kr', '(col0 + c)')}; }`;
  const body = {
    whole: `${loads}
      ${storeLeft}
      ${storeRight}`,
    load: `${loads}
      nl[n] = lv;
      nr[n] = rv;`,
    store: `let lv = nl[n];
      let rv = nr[n];
      ${storeLeft}
      ${storeRight}`,
  }[part];
  return `    // ${(side * depth) / THREADS} ${part === 'store' ? 'stores' : 'loads'} an invocation of each operand.
    for (var n = 0u; n < ${(side * depth) / THREADS}u; n++) {
      let e = tid + n * ${THREADS}u;
      let r = e / ${depth}u;
      let kl = e % ${depth}u;
      ${
        rightRowMajor
          ? `let kk = e / ${side}u;
      let c = e % ${side}u;`
          : `let c = e / ${depth}u;
      let kk = e % ${depth}u;`
      }
      ${body}
    }`;
}

/**
 * The inner dimension a workgroup walks, as WGSL expressions of its first step and its end: all
 * of it, or with `splitDepth` (a multiple of the step) the workgroup's split of it, wg.z's.
 */
function depthRange(inner: number, step: number, splitDepth: number | null): { start: string; end: string } {
  if (splitDepth === null) return { start: '0u', end: `${inner}u` };
  if (splitDepth % step !== 0) throw new Error(`a split of ${splitDepth} is not a multiple of the tile's depth, ${step}`);
  return { start: `wg.z * ${splitDepth}u`, end: `min(${inner}u, (wg.z + 1u) * ${splitDepth}u)` };
}

/** The loop over depthRange, `step` at a time. */
function depthLoop(inner: number, step: number, splitDepth: number | null): string {
  const { start, end } = depthRange(inner, step, splitDepth);
  return `for (var k0 = ${start}; k0 < ${end}; k0 += ${step}u)`;
}

/** The left operand of a tiled product as a row-major array<f32> `name` of `inner` columns (tiledProduct's leftAt). */
export function rowMajor(name: string, inner: number): (row: string, k: string) => string {
  return (row, k) => `${name}[${row} * ${inner}u + ${k}]`;
}

/**
 * A tiled product out [M, cols] = left [M, inner] right, the left row-major (`leftAt(row, k)`:
 * its element, which may do work on the way in, as an RMSNorm folded into the product) and the
 * right read as [inner, cols] (`rightAt(k, c)`: W [K, N] for y, W^T for dx, `rightRowMajor`
 * telling which of k and c is contiguous in memory, so that neighbouring threads load
 * neighbouring floats). A workgroup of 16 x 16 threads computes a `tile` x `tile` block of the
 * output, each thread P x P of it in registers (P = tile / 16: rows y*4 + 64 g + i and
 * columns x*4 + 64 h + j, g and h under P / 4, so that a thread's four rows or columns are one
 * vec4 and the 16 threads of a row read neighbouring vec4s), stepping through `inner` DEPTH at a time with both operands' slices
 * staged in workgroup memory, k-major, so that a thread reads its P rows of the left and its P
 * columns of the right as P / 2 vec4 loads for P x P multiply-adds; `finish(row, col, acc)`
 * gives the value (the epilogue: bias, the adapters' part), which `store` writes. The program
 * around it binds the uniform `u.M` (the left's rows), defines `finish`, and dispatches
 * productTiling's grid for the same tile. With `splitDepth`, the product is split along the
 * inner dimension (the grid's z: each workgroup sums that much of it, SPLIT_DEPTH a multiple),
 * and `store` puts each split's sums apart, by `wg.z`, for the program after it to add up.
 * The 32-tile (narrowProduct) and the matrix tile (matrixProduct) are programs of their own
 * with the same staging, tile order and epilogue.
 */
export function tiledProduct(
  inner: number,
  cols: number,
  tile: ProductTile,
  leftAt: (row: string, k: string) => string,
  rightAt: (k: string, c: string) => string,
  rightRowMajor: boolean,
  store: (row: string, col: string, value: string) => string,
  extra: ExtraWork | null = null,
  splitDepth: number | null = null,
): string {
  const p: Operands = { inner, cols, leftAt, rightAt, rightRowMajor, store, extra, splitDepth };
  if (tile === 'matrix') return matrixProduct(p);
  if (tile === NARROW_TILE) return narrowProduct(p);
  const groups = tile / (4 * SIDE);
  const walk = f32Walk(p, tile);
  return `${f32TileOpening(p, tile)}
  // acc[(g * 4 + i) * ${groups} + h]: row group g's row i, column group h's four columns.
  var acc : array<vec4<f32>, ${4 * groups * groups}>;
${walk.before}
  ${walk.loop} {
${walk.staging}
    for (var kk = 0u; kk < ${DEPTH}u; kk++) {
      var a : array<vec4<f32>, ${groups}>;
      var b : array<vec4<f32>, ${groups}>;
      for (var g = 0u; g < ${groups}u; g++) {
        a[g] = ls[${stagedAt(tile, 'kk', `g * ${SIDE}u + lid.y`)}];
        b[g] = rs[${stagedAt(tile, 'kk', `g * ${SIDE}u + lid.x`)}];
      }
      for (var g = 0u; g < ${groups}u; g++) {
        for (var i = 0u; i < 4u; i++) {
          for (var h = 0u; h < ${groups}u; h++) { acc[(g * 4u + i) * ${groups}u + h] += a[g][i] * b[h]; }
        }
      }
    }
    workgroupBarrier();
  }
  for (var g = 0u; g < ${groups}u; g++) {
    for (var i = 0u; i < 4u; i++) {
      let row = row0 + g * ${4 * SIDE}u + lid.y * 4u + i;
      for (var h = 0u; h < ${groups}u; h++) {
        for (var j = 0u; j < 4u; j++) {
          let col = col0 + h * ${4 * SIDE}u + lid.x * 4u + j;
          if (row < u.M && col < ${cols}u) { ${store('row', 'col', `finish(row, col, acc[(g * 4u + i) * ${groups}u + h][j])`)} }
        }
      }
    }
  }
}`;
}

/** A product's operands and epilogue as tiledProduct takes them, for the program of its tile. */
interface Operands {
  inner: number;
  cols: number;
  leftAt: (row: string, k: string) => string;
  rightAt: (k: string, c: string) => string;
  rightRowMajor: boolean;
  store: (row: string, col: string, value: string) => string;
  extra: ExtraWork | null;
  splitDepth: number | null;
}

/**
 * The width of the vectors an f32 tile stages its operands in: a thread of the 64- and 128-tiles
 * reads its rows (columns) of a step four at a time, one vec4 of each group of 64; a thread of
 * the 32-tile its two as one vec2.
 */
const stagedWidth = (tile: number) => (tile === NARROW_TILE ? 2 : 4);

/**
 * Where an f32 tile's staged slice (either operand's: DEPTH steps of k, each the tile's values
 * as vectors of stagedWidth) holds vector `q` of step `k`: at k * tile / width + (q ^ (k % S)),
 * each step's vectors swizzled by its k, S the vectors that span workgroup memory's 32 banks (8
 * vec4s, 16 vec2s). The threads staging one row of the left, or one column of a right read
 * transposed (an input gradient's W^T), write its DEPTH values a step apart: unswizzled, a
 * multiple of 32 floats apart, all of them into one bank (a 16-way conflict); swizzled, over
 * S vectors' banks (2-way for vec4s, none for vec2s), with no padding, so that the 128-tile's
 * slices take WebGPU's default workgroup memory, 16,384 bytes, and no more. A step's reads stay
 * whole vectors, the same ones permuted among a row of 16 threads.
 */
function stagedAt(tile: number, k: string, q: string): string {
  const width = stagedWidth(tile);
  return `${k} * ${tile / width}u + ((${q}) ^ (${k} & ${32 / width - 1}u))`;
}

/** An f32 tile's workgroup memory (both operands' staged slices, as vectors of stagedWidth) and its `main` up to the tile's origin: a workgroup of 16 x 16 threads. */
function f32TileOpening(p: Operands, tile: number): string {
  const width = stagedWidth(tile);
  return `// ls [DEPTH][tile] (the left's tile rows of each k), rs [DEPTH][tile] (the right's tile columns), as vec${width}s swizzled by k (stagedAt).
var<workgroup> ls : array<vec${width}<f32>, ${(DEPTH * tile) / width}>;
var<workgroup> rs : array<vec${width}<f32>, ${(DEPTH * tile) / width}>;
${groupedTile}
@compute @workgroup_size(${SIDE}, ${SIDE})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) grid : vec3<u32>, @builtin(local_invocation_id) lid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
${tileOrigin(tile, p.extra, p.splitDepth !== null)}`;
}

/**
 * An f32 tile's walk of the inner dimension up to its multiply-adds: what comes before the loop,
 * the loop's header, and the start of its body, which stages a step of DEPTH of both operands
 * into ls and rs (stagedLoads) and waits for the workgroup's stores. Prefetched
 * (setProductPrefetch), each step's values are loaded into registers during the step before,
 * their loads in flight while that step's multiply-adds run, and only stored at the step's
 * start.
 */
function f32Walk(p: Operands, tile: number): { before: string; loop: string; staging: string } {
  const width = stagedWidth(tile);
  const staged = (part: StagingPart) =>
    stagedLoads(tile, DEPTH, p.inner, p.cols, p.leftAt, p.rightAt, p.rightRowMajor, `ls[${stagedAt(tile, 'kl', `r / ${width}u`)}][r % ${width}u] = lv;`, `rs[${stagedAt(tile, 'kk', `c / ${width}u`)}][c % ${width}u] = rv;`, part);
  if (!prefetch) return { before: '', loop: depthLoop(p.inner, DEPTH, p.splitDepth), staging: `${staged('whole')}\n    workgroupBarrier();` };
  const { start, end } = depthRange(p.inner, DEPTH, p.splitDepth);
  const values = (tile * DEPTH) / THREADS;
  return {
    before: `  // The next step's values of each operand, loaded a step ahead of their staging.
  var nl : array<f32, ${values}>;
  var nr : array<f32, ${values}>;
  let kEnd = ${end};
  {
    let kn = ${start};
${staged('load')}
  }`,
    loop: `for (var k0 = ${start}; k0 < kEnd; k0 += ${DEPTH}u)`,
    staging: `${staged('store')}
    workgroupBarrier();
    let kn = k0 + ${DEPTH}u;
    if (kn < kEnd) {
${staged('load')}
    }`,
  };
}

/** The narrow tile's side: a workgroup's 16 x 16 threads 2 x 2 outputs each. */
const NARROW_TILE = 32;

/**
 * tiledProduct on 32 x 32 tiles, for a product whose 64-tiles would leave most of a large GPU
 * without work (productTiling): four times the workgroups, each thread 2 x 2 outputs (rows
 * lid.y * 2 + i, columns lid.x * 2 + j), the same staging, DEPTH of both operands at a time
 * (two values of each an invocation), tile order and epilogue. The slices are staged as vec2s
 * (stagedWidth), so that a thread reads its two rows of the left and its two columns of the
 * right as one vector each, with no select between the halves of a vec4.
 */
function narrowProduct(p: Operands): string {
  const tile = NARROW_TILE;
  const walk = f32Walk(p, tile);
  return `${f32TileOpening(p, tile)}
  // acc[i]: row i's two columns.
  var acc : array<vec2<f32>, 2>;
${walk.before}
  ${walk.loop} {
${walk.staging}
    for (var kk = 0u; kk < ${DEPTH}u; kk++) {
      let a = ls[${stagedAt(tile, 'kk', 'lid.y')}];
      let b = rs[${stagedAt(tile, 'kk', 'lid.x')}];
      acc[0] += a.x * b;
      acc[1] += a.y * b;
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 2u; i++) {
    let row = row0 + lid.y * 2u + i;
    for (var j = 0u; j < 2u; j++) {
      let col = col0 + lid.x * 2u + j;
      if (row < u.M && col < ${p.cols}u) { ${p.store('row', 'col', `finish(row, col, acc[i][j])`)} }
    }
  }
}`;
}

/** The matrix tile's side, and the inner dimension its operands are staged a step (in f16). */
const MATRIX_TILE = 64;
const MATRIX_DEPTH = 16;

/** What a split of a product's inner dimension (tiledProduct's splitDepth) is a multiple of: every tile's staging depth. */
export const SPLIT_DEPTH = Math.max(DEPTH, MATRIX_DEPTH);

/** Whether subgroup matrices of `shape` tile the matrix tile evenly, every subgroup of a workgroup taking as many of its blocks. */
export function matrixTileFits({ M, N, K, subgroupSize }: SubgroupMatrices): boolean {
  const subgroups = THREADS / subgroupSize;
  const blocks = (MATRIX_TILE / M) * (MATRIX_TILE / N);
  return Number.isInteger(subgroups) && MATRIX_TILE % M === 0 && MATRIX_TILE % N === 0 && MATRIX_DEPTH % K === 0 && blocks % subgroups === 0;
}

/**
 * tiledProduct on tensor cores: the same product, tile order, staging and epilogue, its
 * multiply-adds in subgroup matrices (useSubgroupMatrices). A workgroup of 256 invocations
 * computes a 64 x 64 tile of the output: both operands' slices of MATRIX_DEPTH are staged in
 * workgroup memory as f16, row-major (the left [64][DEPTH], the right [DEPTH][64]), and each
 * subgroup multiplies its blocks of the tile (M x N each, every S-th block for S subgroups) into
 * f32 accumulators K at a time. Then each subgroup stores a block at a time into a scratch of
 * its own and its invocations give that block's values to `finish` and `store`, as the tiled
 * product's threads do theirs. f16 operands carry 11 significant bits (and overflow past 65504),
 * the accumulation is f32: PyTorch's autocast products on the same cores.
 */
function matrixProduct(p: Operands): string {
  const { inner, cols, leftAt, rightAt, rightRowMajor, store, extra, splitDepth } = p;
  const shape = subgroupMatrices;
  if (!shape) throw new Error('a matrix tile without subgroup matrices (useSubgroupMatrices)');
  const { M, N, K, subgroupSize } = shape;
  const T = MATRIX_TILE;
  const D = MATRIX_DEPTH;
  const subgroups = THREADS / subgroupSize;
  const blockColumns = T / N;
  const perSubgroup = ((T / M) * blockColumns) / subgroups;
  // Directives first in the module (runMultiOutputProgram moves them there).
  return `enable f16;
enable chromium_experimental_subgroup_matrix;
// Every subgroup runs the same loops; only its blocks' offsets differ, which the matrices' loads may take.
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);
// ls [64][DEPTH] (the left's tile rows), rs [DEPTH][64] (the right's tile columns), in f16; os a subgroup's block of results.
var<workgroup> ls : array<f16, ${T * D}>;
var<workgroup> rs : array<f16, ${D * T}>;
var<workgroup> os : array<f32, ${subgroups * M * N}>;
${groupedTile}
@compute @workgroup_size(${THREADS})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) grid : vec3<u32>, @builtin(local_invocation_index) tid : u32, @builtin(subgroup_id) sg : u32, @builtin(subgroup_invocation_id) lane : u32) {
${tileOrigin(T, extra, splitDepth !== null)}
  // acc[j]: block sg + j * ${subgroups} of the tile's ${(T / M) * blockColumns}, ${blockColumns} to a row of blocks.
  var acc : array<subgroup_matrix_result<f32, ${N}, ${M}>, ${perSubgroup}>;
  ${depthLoop(inner, D, splitDepth)} {
${stagedLoads(T, D, inner, cols, leftAt, rightAt, rightRowMajor, `ls[r * ${D}u + kl] = f16(lv);`, `rs[kk * ${T}u + c] = f16(rv);`)}
    workgroupBarrier();
    for (var kk = 0u; kk < ${D}u; kk += ${K}u) {
      for (var j = 0u; j < ${perSubgroup}u; j++) {
        let block = sg + j * ${subgroups}u;
        let a = subgroupMatrixLoad<subgroup_matrix_left<f16, ${K}, ${M}>, row_major>(&ls, (block / ${blockColumns}u) * ${M * D}u + kk, ${D}u);
        let b = subgroupMatrixLoad<subgroup_matrix_right<f16, ${N}, ${K}>, row_major>(&rs, kk * ${T}u + (block % ${blockColumns}u) * ${N}u, ${T}u);
        acc[j] = subgroupMatrixMultiplyAccumulate(a, b, acc[j]);
      }
    }
    workgroupBarrier();
  }
  for (var j = 0u; j < ${perSubgroup}u; j++) {
    let block = sg + j * ${subgroups}u;
    subgroupMatrixStore<row_major>(&os, sg * ${M * N}u, acc[j], ${N}u);
    workgroupBarrier();
    for (var e = lane; e < ${M * N}u; e += ${subgroupSize}u) {
      let row = row0 + (block / ${blockColumns}u) * ${M}u + e / ${N}u;
      let col = col0 + (block % ${blockColumns}u) * ${N}u + e % ${N}u;
      if (row < u.M && col < ${cols}u) { ${store('row', 'col', `finish(row, col, os[sg * ${M * N}u + e])`)} }
    }
    workgroupBarrier();
  }
}`;
}
