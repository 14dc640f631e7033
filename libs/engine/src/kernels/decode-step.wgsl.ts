import type { HiddenAct } from '../config';
import type { StorageDtype } from '../dtype';
import { forwardDeclarations, forwardTiles, forwardWalk } from './attention.wgsl';
import { gateActivationWgsl } from './gate-activation.wgsl';
import { EmbeddingSource, embeddingReader, vec4WeightWgsl, weightReader } from './half-weights.wgsl';
import { ProductTile, rowMajor, tiledProduct } from './tiled-product.wgsl';
import { wgslModule } from './webgpu-program';

/**
 * The WGSL programs of a decoding step on webgpu (decode-step.webgpu.ts encodes them): linear
 * products over splits of K with RMSNorm folded into their input (and, where asked, their
 * adapters' x A or (x A) B); the programs that sum the splits into the residual stream (with
 * the next RMSNorm's 1/rms, and an adapter's delta) or into SwiGLU; RoPE, which sums the q|k|v
 * splits and writes the KV cache's new columns in place; attention over the cache, which for a
 * decoding step does RoPE's work itself; and the next token drawn from the logits. Each is one
 * dispatch. Every program reads its sizes from uniforms, so one compiled pipeline serves every
 * batch size and cache width (the split count, where a program unrolls over it, is compiled in).
 */

/** Threads of a workgroup in every program here. */
export const WORKGROUP = 64;

/** Rows of the weight a linear thread reads per step of its loop: a constant trip count, so the loads are unrolled and in flight together. */
export const TILE_K = 16;

/** Most K splits of a linear product (a power of two: the programs that sum the splits unroll over them). */
export const MAX_SPLITS = 32;

/** Most columns of a product's adapters' x A: their ranks together (q, k and v of rank 64). */
export const MAX_LORA_RANK = 192;

/** Workgroups a dispatch may have along one dimension (WebGPU's default limit). */
const MAX_WORKGROUPS_PER_DIMENSION = 65535;

/**
 * The workgroups of a program with one thread per element of `count`, as [x, y]: along x up to
 * the limit, the rest along y. The program takes its element as FLAT_INDEX.
 */
export function flatGrid(count: number): [number, number] {
  const groups = Math.ceil(count / WORKGROUP);
  const y = Math.ceil(groups / MAX_WORKGROUPS_PER_DIMENSION);
  return [Math.ceil(groups / y), y];
}

/** A thread's element in a flatGrid dispatch (past the count in the last workgroups). */
const FLAT_INDEX = `(wg.y * groups.x + wg.x) * ${WORKGROUP}u + tid`;

/** Largest head dimension attention keeps in registers (MAX_HEAD_DIM / WORKGROUP per thread). */
export const MAX_HEAD_DIM = 256;

/**
 * How a linear product takes the low-rank adapters (LoRA) of its weight: not at all;
 * `addDelta`, its first split adding (x A) B, x A made by a product before it; or `makeXA`,
 * making x A itself in workgroups past its own column tiles, over the same splits of K, for the
 * program that sums its splits to add (x A) B (finishResidualShader).
 */
export type LinearAdapters = 'none' | 'addDelta' | 'makeXA';

/**
 * A linear product's partial sums, x W over one split of K, for x [rows, K] and W [K, ldw] (a
 * row-major [in, out] weight read as vec4 columns): partial [splits, rows, n4] of vec4. One
 * workgroup computes `rows` rows by 64 vec4 columns (256 outputs) over `chunk` rows of the
 * weight (grid: row tiles, column tiles, splits: row tiles first, so that the workgroups that
 * read the same columns of the weight start together and share its loads from cache; the
 * inputs, at most a prompt chunk's rows, stay in cache whatever the order). Each thread keeps its column's sums in
 * registers while the workgroup steps through its chunk TILE_K rows at a time, the input rows
 * staged in workgroup memory; the 64 threads read 1 KB of one weight row at a time. Splitting K
 * gives a decoding step's narrow products enough workgroups to keep the GPU's memory busy; the
 * consumer sums the splits (rope, finish programs). With `norm`, the input is RMSNorm'd on the
 * way in: x * rinv[row] * gamma, rinv computed by the program that wrote x. Dims: rows, k, n4
 * (output vec4 columns), ldw4 (weight row stride in vec4), chunk (K a split covers), inStride
 * and inOffset (input row r starts at r inStride + inOffset: the lm_head reads each sequence's
 * last token this way, and its rinv at (r inStride + inOffset) / k), rank, adapters and
 * loraSplits (the adapters, as `adapters` says: x A has `rank` columns, each of one adapter,
 * rankAdapter[j]; row r takes adapter a where rowAdapters [rows, adapters] is 1, so that
 * adapters sharing a batch row by row each apply to their own rows; with addDelta, x A is the
 * sum of loraIn's loraSplits splits [splits, rows, rank]; with makeXA, x A [K, rank] is the
 * weight of one more column tile, written to loraIn [splits, rows, rank]). `weights` is how W is
 * held: f32, or 16 bits a value (half-weights.wgsl.ts), unpacked to f32 as it is read.
 */
export function linearShader(rows: number, norm: boolean, adapters: LinearAdapters = 'none', weights: StorageDtype = 'F32'): string {
  const R = rows;
  const loraBinding = norm ? 6 : 4;
  const bindings = {
    none: '',
    addDelta: adapterDeltaWgsl(loraBinding),
    makeXA: `@group(0) @binding(${loraBinding}) var<storage, read> loraA : array<vec4<f32>>;
@group(0) @binding(${loraBinding + 1}) var<storage, read_write> loraIn : array<vec4<f32>>;`,
  }[adapters];
  // The staged input, k-major: rows r of step kk at xs[kk * R + r], so that with R a multiple of 4
  // a thread reads four rows' inputs in one vec4 load (xs4) where it would make four.
  const vectorRows = R % 4 === 0;
  const xsDeclaration = vectorRows ? `var<workgroup> xs : array<vec4<f32>, ${(R * TILE_K) / 4}>;` : `var<workgroup> xs : array<f32, ${R * TILE_K}>;`;
  const stage = vectorRows ? 'xs[(i % TK) * (R / 4u) + (i / TK) / 4u][(i / TK) % 4u] = value;' : 'xs[(i % TK) * R + i / TK] = value;';
  const multiplyAdd = vectorRows
    ? `for (var q = 0u; q < R / 4u; q++) {
        let xv = xs[kk * (R / 4u) + q];
        acc[4u * q] += xv.x * wv;
        acc[4u * q + 1u] += xv.y * wv;
        acc[4u * q + 2u] += xv.z * wv;
        acc[4u * q + 3u] += xv.w * wv;
      }`
    : 'for (var r = 0u; r < R; r++) { acc[r] += xs[kk * R + r] * wv; }';
  // acc[r] += the tile's input rows times the weight's column wcol, over the workgroup's split of K.
  const accumulate = (weight4: (index: string) => string, ldw4: string) => `
  for (var k0 = kBegin; k0 < kEnd; k0 += TK) {
    for (var i = tid; i < R * TK; i += ${WORKGROUP}u) {
      let row = row0 + i / TK;
      let k = k0 + i % TK;
      var value = 0.0;
      if (row < dims.rows && k < kEnd) {
        let at = row * dims.inStride + dims.inOffset;
        value = x[at + k];
${norm ? '        value = value * rinv[at / K] * gamma[k];' : ''}
      }
      ${stage}
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      // Past kEnd the staged input is 0: the clamped row's weights add nothing.
      let wv = ${weight4(`min(k0 + kk, K - 1u) * ${ldw4} + wcol`)};
      ${multiplyAdd}
    }
    workgroupBarrier();
  }`;
  const store = (out: string, n4: string) => `
  if (col < ${n4}) {
    for (var r = 0u; r < R; r++) {
      let row = row0 + r;
      if (row >= dims.rows) { break; }
      ${out}[(wg.z * dims.rows + row) * ${n4} + col] = acc[r];
    }
  }`;
  return `
struct Dims { rows : u32, k : u32, n4 : u32, ldw4 : u32, chunk : u32, inStride : u32, inOffset : u32, rank : u32, adapters : u32, loraSplits : u32 }
@group(0) @binding(0) var<uniform> dims : Dims;
@group(0) @binding(1) var<storage, read> x : array<f32>;
${vec4WeightWgsl('@group(0) @binding(2)', 'w', weights)}
@group(0) @binding(3) var<storage, read_write> partial : array<vec4<f32>>;
${norm ? '@group(0) @binding(4) var<storage, read> gamma : array<f32>;\n@group(0) @binding(5) var<storage, read> rinv : array<f32>;' : ''}
${bindings}

const R : u32 = ${R}u;
const TK : u32 = ${TILE_K}u;
${xsDeclaration}
${adapters === 'addDelta' ? `var<workgroup> loraU : array<f32, ${R * MAX_LORA_RANK}>;` : ''}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let row0 = wg.x * R;
  let K = dims.k;
  let kBegin = wg.z * dims.chunk;
  let kEnd = min(K, kBegin + dims.chunk);
  let columnTiles = (dims.n4 + ${WORKGROUP - 1}u) / ${WORKGROUP}u;
  var acc : array<vec4<f32>, ${R}>;
${
  adapters === 'makeXA'
    ? `  // The adapters' x A: the workgroups past the product's column tiles, over the same split of
  // K, into loraIn. wg.y is the same for the whole workgroup, so its barriers are too.
  if (wg.y >= columnTiles) {
    let rank4 = dims.rank / 4u;
    let col = (wg.y - columnTiles) * ${WORKGROUP}u + tid;
    let wcol = min(col, rank4 - 1u);
${accumulate((i) => `loraA[${i}]`, 'rank4')}
${store('loraIn', 'rank4')}
    return;
  }`
    : ''
}
  let col = wg.y * ${WORKGROUP}u + tid;
  // Threads past the last column read its weights (and write nothing), so every load is in range.
  let wcol = min(col, dims.n4 - 1u);
${accumulate((i) => `w4(${i})`, 'dims.ldw4')}
${
  adapters === 'addDelta'
    ? `  // The adapters' delta, once (by the first split): u = x A, the sum of loraIn's loraSplits
  // splits [splits, rows, rank], staged for the tile's rows with each rank column kept only on
  // the rows of its adapter; then u B [rank, n4] (block-diagonal over the parts, alpha / r
  // folded in). wg.z is the same for the whole workgroup, so its barrier is too.
  if (wg.z == 0u) {
    for (var i = tid; i < R * dims.rank; i += ${WORKGROUP}u) {
      let row = min(row0 + i / dims.rank, dims.rows - 1u);
      let j = i % dims.rank;
      var u = 0.0;
      for (var s = 0u; s < dims.loraSplits; s++) { u += loraIn[(s * dims.rows + row) * dims.rank + j]; }
      loraU[i] = u * takes(row, j);
    }
    workgroupBarrier();
    if (col < dims.n4) {
      for (var j = 0u; j < dims.rank; j++) {
        let b = loraB[j * dims.n4 + col];
        for (var r = 0u; r < R; r++) { acc[r] += loraU[r * dims.rank + j] * b; }
      }
    }
  }`
    : ''
}
${store('partial', 'dims.n4')}
}`;
}

/**
 * A step's linear product in the tiles of tiled-product.wgsl.ts (a prompt's chunk, a batch of
 * many rows): x [rows, K] W [K, N] over splits of K of `splitDepth` each (the grid's z), into
 * partial [splits, rows, N] as linearShader writes it, with `norm` the input RMSNorm'd on the
 * way in as linearShader does (x * rinv[row] * gamma[k]). The same bindings and uniforms as
 * linearShader's (its uniform's first field, rows, is the tiled product's `u.M`), so one bind
 * group serves both; `weights` and `adapters` as linearShader's: with addDelta, the first
 * split's store adds each element's (x A) B (loraDelta); with makeXA, x A over each split of K
 * is made in workgroups of the product's dispatch after its tiles (tiledXAWorkgroups of them in
 * each split's layer of the grid). A tile stages both operands, so each weight value staged
 * serves 64 (or 128) rows where linearShader's serves 16; a product of a small model still
 * splits K, fewer times, to make workgroups enough for the GPU. On the matrix tile, it runs on
 * tensor cores. Dispatched on productTiling's grid for the tile, with the splits along z.
 */
export function tiledLinearShader(K: number, N: number, tile: ProductTile, splitDepth: number, norm: boolean, weights: StorageDtype = 'F32', adapters: LinearAdapters = 'none'): string {
  const w = weightReader('w', weights, N);
  const input = rowMajor('x', K);
  const loraBinding = norm ? 6 : 4;
  const bindings = {
    none: '',
    addDelta: `${adapterDeltaWgsl(loraBinding, 'u')}

// Row row's (x A) B in column col: x A the sum of loraIn's loraSplits splits, each rank column on the rows of its adapter.
fn loraDelta(row : u32, col : u32) -> f32 {
  var delta = 0.0;
  for (var j = 0u; j < u.rank; j++) {
    var xa = 0.0;
    for (var s = 0u; s < u.loraSplits; s++) { xa += loraIn[(s * u.M + row) * u.rank + j]; }
    delta += xa * takes(row, j) * loraB[j * u.n4 + col / 4u][col % 4u];
  }
  return delta;
}`,
    makeXA: `@group(0) @binding(${loraBinding}) var<storage, read> loraA : array<f32>;
@group(0) @binding(${loraBinding + 1}) var<storage, read_write> loraIn : array<f32>;`,
  }[adapters];
  const store = (row: string, col: string, value: string) => {
    const at = `(wg.z * u.M + ${row}) * ${N}u + ${col}`;
    if (adapters !== 'addDelta') return `partial[${at}] = ${value};`;
    return `var value = ${value};
          if (wg.z == 0u) { value += loraDelta(${row}, ${col}); }
          partial[${at}] = value;`;
  };
  // makeXA: element (row, j) of x A over the workgroup's split of K, a thread each, into its split's slice of loraIn [splits, rows, rank].
  const extra =
    adapters === 'makeXA'
      ? {
          everySplit: true,
          body: `    let e = extra * ${TILED_XA_WORKGROUP}u + tid;
    if (e < u.M * u.rank) {
      let row = e / u.rank;
      let j = e % u.rank;
      var xa = 0.0;
      for (var k = wg.z * ${splitDepth}u; k < min(${K}u, (wg.z + 1u) * ${splitDepth}u); k++) { xa += x[row * ${K}u + k] * loraA[k * u.rank + j]; }
      loraIn[(wg.z * u.M + row) * u.rank + j] = xa;
    }`,
        }
      : null;
  return wgslModule(`
struct Dims { M : u32, k : u32, n4 : u32, ldw4 : u32, chunk : u32, inStride : u32, inOffset : u32, rank : u32, adapters : u32, loraSplits : u32 }
@group(0) @binding(0) var<uniform> u : Dims;
@group(0) @binding(1) var<storage, read> x : array<f32>;
@group(0) @binding(2) var<storage, read> w : array<${weights === 'F32' ? 'f32' : 'u32'}>;
@group(0) @binding(3) var<storage, read_write> partial : array<f32>;
${norm ? '@group(0) @binding(4) var<storage, read> gamma : array<f32>;\n@group(0) @binding(5) var<storage, read> rinv : array<f32>;' : ''}
${bindings}
${w.helpers}
fn finish(row : u32, col : u32, acc : f32) -> f32 {
  return acc;
}
${tiledProduct(K, N, tile, norm ? (row, k) => `${input(row, k)} * rinv[${row}] * gamma[${k}]` : input, w.at, true, store, extra, splitDepth)}`);
}

/** Threads a workgroup of every tiled product (tiled-product.wgsl.ts: 16 x 16), each an element of x A in tiledLinearShader's makeXA. */
const TILED_XA_WORKGROUP = 256;

/** Workgroups of a tiled makeXA product's x A in each split's layer of its grid, for `rows` rows of x A's `rank` columns. */
export function tiledXAWorkgroups(rows: number, rank: number): number {
  return Math.ceil((rows * rank) / TILED_XA_WORKGROUP);
}

/**
 * The bindings from `first` on of a program that adds the adapters' delta (x A) B: loraIn (x A's
 * splits, f32), loraB [rank, n4] (vec4), rankAdapter (each rank column's adapter) and
 * rowAdapters [rows, adapters]; and takes(row, j), 1 where row `row` takes rank column j's
 * adapter, else 0. The program's uniforms (`uniforms`) have an `adapters` field (rowAdapters'
 * row stride).
 */
function adapterDeltaWgsl(first: number, uniforms = 'dims'): string {
  return `@group(0) @binding(${first}) var<storage, read> loraIn : array<f32>;
@group(0) @binding(${first + 1}) var<storage, read> loraB : array<vec4<f32>>;
@group(0) @binding(${first + 2}) var<uniform> rankAdapter : array<vec4<u32>, ${MAX_LORA_RANK / 4}>;
@group(0) @binding(${first + 3}) var<storage, read> rowAdapters : array<f32>;

fn takes(row : u32, j : u32) -> f32 {
  return rowAdapters[row * ${uniforms}.adapters + rankAdapter[j / 4u][j % 4u]];
}`;
}

/**
 * The residual stream's next value from a product's splits, one workgroup per row: y =
 * residual + the sum of `splits` partials, and rinv[row] = 1 / rms(y), which the next product's
 * RMSNorm takes. With `lora`, also the product's adapters' delta (x A) B, x A the sum of
 * loraIn's `splits` splits (the product made it: makeXA): the row's x A staged in workgroup
 * memory, then B [rank, n4] read once per row. With `norm` (Gemma 3's norms on the attention's
 * and the MLP's outputs), the product's row is RMSNorm'd by gamma [n4] (the binding after the
 * others) before it is added: y = residual + rmsnorm(product). Dims: rows, n4 (vec4 columns),
 * rank, adapters (see linearShader), eps.
 */
export function finishResidualShader(splits: number, lora = false, norm = false): string {
  const product = `var value = vec4<f32>(0.0);
    for (var s = 0u; s < ${splits}u; s++) { value += partial[(s * dims.rows + row) * n4 + c]; }
${lora ? '    for (var j = 0u; j < dims.rank; j++) { value += loraU[j] * loraB[j * n4 + c]; }' : ''}`;
  const sumSquares = (total: string) => `squares[tid] = ${total};
  workgroupBarrier();
  for (var n = ${WORKGROUP / 2}u; n > 0u; n = n / 2u) {
    if (tid < n) { squares[tid] += squares[tid + n]; }
    workgroupBarrier();
  }`;
  return `
struct Dims { rows : u32, n4 : u32, rank : u32, adapters : u32, eps : f32 }
@group(0) @binding(0) var<uniform> dims : Dims;
@group(0) @binding(1) var<storage, read> partial : array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> residual : array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y : array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> rinv : array<f32>;
${lora ? `${adapterDeltaWgsl(5)}\nvar<workgroup> loraU : array<f32, ${MAX_LORA_RANK}>;` : ''}
${norm ? `@group(0) @binding(${lora ? 9 : 5}) var<storage, read> gamma : array<vec4<f32>>;` : ''}
var<workgroup> squares : array<f32, ${WORKGROUP}>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let row = wg.x;
  let n4 = dims.n4;
${
  lora
    ? `  // The row's x A, each rank column kept only if the row takes its adapter.
  for (var j = tid; j < dims.rank; j += ${WORKGROUP}u) {
    var u = 0.0;
    for (var s = 0u; s < ${splits}u; s++) { u += loraIn[(s * dims.rows + row) * dims.rank + j]; }
    loraU[j] = u * takes(row, j);
  }
  workgroupBarrier();`
    : ''
}
${
  norm
    ? `  // The product's row into y first (each thread reads back only what it wrote), for its norm.
  var productSquares = 0.0;
  for (var c = tid; c < n4; c += ${WORKGROUP}u) {
    ${product}
    y[row * n4 + c] = value;
    productSquares += dot(value, value);
  }
  ${sumSquares('productSquares')}
  let scale = inverseSqrt(squares[0] / f32(4u * n4) + dims.eps);
  workgroupBarrier();
  var sum = 0.0;
  for (var c = tid; c < n4; c += ${WORKGROUP}u) {
    let value = residual[row * n4 + c] + y[row * n4 + c] * scale * gamma[c];
    y[row * n4 + c] = value;
    sum += dot(value, value);
  }`
    : `  var sum = 0.0;
  for (var c = tid; c < n4; c += ${WORKGROUP}u) {
    ${product}
    value += residual[row * n4 + c];
    y[row * n4 + c] = value;
    sum += dot(value, value);
  }`
}
  ${sumSquares('sum')}
  if (tid == 0u) { rinv[row] = inverseSqrt(squares[0] / f32(4u * n4) + dims.eps); }
}`;
}

/**
 * A step's embeddings read from the table on the GPU, `source` (a tied model's lm_head, the
 * table transposed, or an untied model's own copy), with each row's 1/rms for the first layer's
 * folded norm: x [rows, C] = scale * table[ids[row]], a workgroup a row. The values are the
 * host's rows (EmbeddingTable.rows) bit for bit; `scale` (Gemma's, an f32 number) is compiled
 * in by its bits. Dims: finishResidualShader's (rows, n4 = C / 4, eps).
 */
export function embedShader(source: EmbeddingSource, scale: number): string {
  const weights = source.dtype;
  const w = embeddingReader('w', source);
  const scaleBits = new Uint32Array(Float32Array.of(scale).buffer)[0];
  return `
struct Dims { rows : u32, n4 : u32, rank : u32, adapters : u32, eps : f32 }
@group(0) @binding(0) var<uniform> dims : Dims;
@group(0) @binding(1) var<storage, read> ids : array<u32>;
@group(0) @binding(2) var<storage, read> w : array<${weights === 'F32' ? 'f32' : 'u32'}>;
@group(0) @binding(3) var<storage, read_write> x : array<f32>;
@group(0) @binding(4) var<storage, read_write> rinv : array<f32>;
${WORKGROUP_REDUCTIONS_WGSL}
${w.helpers}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let row = wg.x;
  let id = ids[row];
  let C = 4u * dims.n4;
  var sum = 0.0;
  for (var h = tid; h < C; h += ${WORKGROUP}u) {
    let value = ${w.at('id', 'h')} * bitcast<f32>(${scaleBits}u);
    x[row * C + h] = value;
    sum += value * value;
  }
  let total = reduceSum(tid, sum);
  if (tid == 0u) { rinv[row] = inverseSqrt(total / f32(C) + dims.eps); }
}`;
}

/**
 * The gated activation from the gate|up product's splits: act [rows, I] = a(gate) * up, a SiLU
 * (SwiGLU) or GELU's tanh approximation (Gemma's GeGLU), gate and up the two halves of each
 * row's summed partials [splits, rows, 2 I]. One thread per vec4 of act. Dims: rows, n4 (I / 4).
 */
export function finishSwigluShader(splits: number, activation: HiddenAct = 'silu'): string {
  return `${gateActivationWgsl(activation)}
struct Dims { rows : u32, n4 : u32, pad0 : u32, pad1 : u32 }
@group(0) @binding(0) var<uniform> dims : Dims;
@group(0) @binding(1) var<storage, read> partial : array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> act : array<vec4<f32>>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let n4 = dims.n4;
  let index = ${FLAT_INDEX};
  if (index >= dims.rows * n4) { return; }
  let row = index / n4;
  let c = index % n4;
  var gate = vec4<f32>(0.0);
  var up = vec4<f32>(0.0);
  for (var s = 0u; s < ${splits}u; s++) {
    let base = (s * dims.rows + row) * 2u * n4;
    gate += partial[base + c];
    up += partial[base + n4 + c];
  }
  act[index] = vec4<f32>(gateValue(gate.x), gateValue(gate.y), gateValue(gate.z), gateValue(gate.w)) * up;
}`;
}

/**
 * reduceMax(tid, value) and reduceSum(tid, value): the maximum and the sum of `value` over the
 * WORKGROUP threads of a workgroup (every thread calls, every thread gets the result), through
 * the workgroup array `partial`.
 */
export const WORKGROUP_REDUCTIONS_WGSL = `
var<workgroup> partial : array<f32, ${WORKGROUP}>;

fn reduceMax(tid : u32, value : f32) -> f32 {
  partial[tid] = value;
  workgroupBarrier();
  for (var n = ${WORKGROUP / 2}u; n > 0u; n = n / 2u) {
    if (tid < n) { partial[tid] = max(partial[tid], partial[tid + n]); }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();
  return total;
}

fn reduceSum(tid : u32, value : f32) -> f32 {
  partial[tid] = value;
  workgroupBarrier();
  for (var n = ${WORKGROUP / 2}u; n > 0u; n = n / 2u) {
    if (tid < n) { partial[tid] += partial[tid + n]; }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();
  return total;
}`;

/**
 * The uniform of a step that RoPE and attention share: the step's tokens (rows of the cache
 * times perRow new tokens each, row-major), the cache columns attention reads (the cache's
 * width plus perRow) and the first new column.
 */
const STEP_UNIFORM = `
struct Step { tokens : u32, columns : u32, column : u32, perRow : u32 }
@group(0) @binding(0) var<uniform> step : Step;`;

/** STEP_UNIFORM and the layer's: its heads, KV heads, head size and the cache's capacity in columns. */
const STEP_UNIFORMS = `${STEP_UNIFORM}
struct Layer { heads : u32, kvHeads : u32, headDim : u32, capacity : u32 }
@group(0) @binding(1) var<uniform> layer : Layer;`;

/**
 * qkvPair(token, head, j): pair (j, j + D/2) of head `head` (q heads, then k, then v) of
 * token `token`'s q|k|v, the q|k|v product's `splits` partial sums [splits, tokens, H + 2 KV,
 * D] plus its bias (zeros where the model has none). rotate(x, table, j): that pair turned by
 * RoPE, tables[table..] holding the token's cos then sin (Rope.tables). Needs the globals step,
 * layer, qkv, bias and tables.
 */
function qkvPairWgsl(splits: number): string {
  return `
fn qkvPair(token : u32, head : u32, j : u32) -> vec2<f32> {
  let D = layer.headDim;
  let half = D / 2u;
  let all = layer.heads + 2u * layer.kvHeads;
  var x = vec2<f32>(bias[head * D + j], bias[head * D + j + half]);
  for (var s = 0u; s < ${splits}u; s++) {
    let src = ((s * step.tokens + token) * all + head) * D;
    x += vec2<f32>(qkv[src + j], qkv[src + j + half]);
  }
  return x;
}

fn rotate(x : vec2<f32>, table : u32, j : u32) -> vec2<f32> {
  let half = layer.headDim / 2u;
  let c = tables[table + j];
  let s = tables[table + half + j];
  return vec2<f32>(x.x * c + (-x.y) * s, x.y * c + x.x * s);
}`;
}

/**
 * storeHeadPair(token, head, j, x): pair (j, j + D/2) of head `head` of token `token`, rotated
 * where it is a q or k head, into q [tokens, H, D] (q heads) or the token's column of its row's
 * cache [rows, KV, capacity, D] (k and v heads). Needs the globals step, layer, q, keys, values.
 */
const STORE_HEAD_PAIR_WGSL = `
fn storeHeadPair(token : u32, head : u32, j : u32, x : vec2<f32>) {
  let H = layer.heads;
  let KV = layer.kvHeads;
  let D = layer.headDim;
  let half = D / 2u;
  let row = token / step.perRow;
  let column = step.column + token % step.perRow;
  var dst : u32;
  if (head < H) {
    dst = (token * H + head) * D;
    q[dst + j] = x.x;
    q[dst + j + half] = x.y;
  } else if (head < H + KV) {
    dst = ((row * KV + head - H) * layer.capacity + column) * D;
    keys[dst + j] = x.x;
    keys[dst + j + half] = x.y;
  } else {
    dst = ((row * KV + head - H - KV) * layer.capacity + column) * D;
    values[dst + j] = x.x;
    values[dst + j + half] = x.y;
  }
}`;

/** The bindings of the RoPE programs (the step's uniforms through binding 7), qkvPair, rotate and storeHeadPair. */
function ropeStoreDeclarations(splits: number): string {
  return `${STEP_UNIFORMS}
@group(0) @binding(2) var<storage, read> qkv : array<f32>;
@group(0) @binding(7) var<storage, read> bias : array<f32>;
@group(0) @binding(3) var<storage, read> tables : array<f32>;
@group(0) @binding(4) var<storage, read_write> q : array<f32>;
@group(0) @binding(5) var<storage, read_write> keys : array<f32>;
@group(0) @binding(6) var<storage, read_write> values : array<f32>;
${qkvPairWgsl(splits)}
${STORE_HEAD_PAIR_WGSL}`;
}

/**
 * RoPE on the step's q and k heads and the KV cache's new columns, from the q|k|v product's
 * `splits` partial sums and its bias: for every token, q heads are rotated into q [tokens, H,
 * D], k heads rotated and v heads copied into the token's column (column + its index in its
 * row) of its row's cache [rows, KV, capacity, D]. One thread per pair (j, j + D/2) of a head.
 * tables [tokens, 4, D/2] holds cos and sin for q (times 1/sqrt(D)), then for k, as
 * Rope.tables. A prompt's chunk takes it before attentionShader; a decoding step, one new
 * token a row, does its work in ropeAttentionShader instead.
 */
export function ropeStoreShader(splits: number): string {
  return `${ropeStoreDeclarations(splits)}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let H = layer.heads;
  let KV = layer.kvHeads;
  let D = layer.headDim;
  let half = D / 2u;
  let all = H + 2u * KV;
  let index = ${FLAT_INDEX};
  if (index >= step.tokens * all * half) { return; }
  let j = index % half;
  let head = (index / half) % all;
  let token = index / (half * all);
  let x = qkvPair(token, head, j);
  storeHeadPair(token, head, j, select(rotate(x, (token * 4u + select(2u, 0u, head < H)) * half, j), x, head >= H + KV));
}`;
}

/**
 * ropeStoreShader for a model with q_norm and k_norm (Qwen3, Gemma 3): a workgroup per (head of q|k|v, token),
 * grid (H + 2 KV, tokens), since each q and k head is RMSNorm'd over its D values (times qNorm
 * or kNorm, HeadNorms) before RoPE turns it; v heads are copied as ropeStoreShader copies them.
 * Bindings: ropeStoreShader's, then the q_norm and k_norm weights.
 */
export function ropeNormStoreShader(splits: number, eps: number): string {
  return `${ropeStoreDeclarations(splits)}
${HEAD_NORM_BINDINGS(8)}
const EPS : f32 = ${wgslFloat(eps)};
var<workgroup> x : array<f32, ${MAX_HEAD_DIM}>;
${WORKGROUP_REDUCTIONS_WGSL}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let H = layer.heads;
  let KV = layer.kvHeads;
  let D = layer.headDim;
  let half = D / 2u;
  let head = wg.x;
  let token = wg.y;
  if (head >= H + KV) {
    for (var j = tid; j < half; j += ${WORKGROUP}u) { storeHeadPair(token, head, j, qkvPair(token, head, j)); }
    return;
  }
  for (var j = tid; j < half; j += ${WORKGROUP}u) {
    let pair = qkvPair(token, head, j);
    x[j] = pair.x;
    x[j + half] = pair.y;
  }
  workgroupBarrier();
  var squares = 0.0;
  for (var d = tid; d < D; d += ${WORKGROUP}u) { squares += x[d] * x[d]; }
  let scale = inverseSqrt(reduceSum(tid, squares) / f32(D) + EPS);
  let isQuery = head < H;
  for (var j = tid; j < half; j += ${WORKGROUP}u) {
    let gamma = select(vec2<f32>(kNorm(j), kNorm(j + half)), vec2<f32>(qNorm(j), qNorm(j + half)), isQuery);
    storeHeadPair(token, head, j, rotate(vec2<f32>(x[j], x[j + half]) * scale * gamma, (token * 4u + select(2u, 0u, isQuery)) * half, j));
  }
}`;
}

/**
 * softmax(q k^T + mask) v over the first `columns` columns of each token's row of the cache,
 * every head of every token in one dispatch: one workgroup per (token, query head), the H / KV
 * query heads of a KV head reading its keys and values (grouped-query attention). Keys go in
 * tiles of one per thread with an online softmax (FlashAttention's running maximum and sum), so
 * any width fits. mask [tokens, columns]: 0 for a column the token sees, KVCache's MASKED for
 * padding and for the row's later new tokens (KVCache.stepMask). The head dimension is compiled
 * in, so a key's dot product is unrolled and its loads are in flight together. q [tokens, H, D]
 * comes rotated from ropeStoreShader, the new columns already in the cache.
 */
export function attentionShader(headDim: number): string {
  return attentionProgram(headDim, null);
}

/**
 * A prompt chunk's attention (T new tokens a row, the columns already in the cache) as
 * FlashAttention does it (attention.wgsl.ts, forwardWalk): a workgroup takes TQ query tokens of
 * one row for one query head (forwardTiles, in `memory` bytes of workgroup memory: the
 * device's, workgroupMemoryLimit), so that each key and value it stages in workgroup memory
 * serves all of them, and walks the columns TK at a time up to its last token's own
 * column (the mask hides every later one), D / 8 threads a token. The grid is (heads, rows x
 * tiles of a row, column splits). Bindings and uniforms are attentionShader's, read as vec4s.
 *
 * With `columnParts`, the grid's z splits each tile's columns (FlashDecoding's split of the
 * keys, for a chunk whose tiles are too few to fill the GPU: a long prompt's later chunks, 16
 * tiles a head for 256 tokens, each walking thousands of columns): workgroup z walks its share
 * of the tile's visible columns (whole blocks of TK) and writes, as ropeAttentionColumnsShader
 * does, each query's unnormalised sums, running maximum and sum: `out` [splits, tokens, H,
 * COLUMN_PART]. combineColumnsShader adds the parts up.
 */
export function promptAttentionShader(headDim: number, memory: number, columnParts = false): string {
  const tiles = forwardTiles(headDim, memory);
  if (tiles === null) throw new Error(`prompt attention tiles take no head dimension ${headDim}`);
  return `${STEP_UNIFORMS}
@group(0) @binding(2) var<storage, read> q : array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> keys : array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> values : array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> mask : array<f32>;
@group(0) @binding(6) var<storage, read_write> out : array<vec4<f32>>;
${forwardDeclarations(headDim, tiles)}

@compute @workgroup_size(${tiles.workgroup})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let H = layer.heads;
  let S = step.columns;
  let T = step.perRow;
  let tilesARow = (T + TQ - 1u) / TQ;
  let head = wg.x;
  let row = wg.y / tilesARow;
  let t0 = (wg.y % tilesARow) * TQ;
  let queries = min(TQ, T - t0);
  let firstToken = row * T + t0;
  let kvHead = head / (H / layer.kvHeads);
  let base = (row * layer.kvHeads + kvHead) * layer.capacity * D4;
  // This thread's query of the tile (the tile's last real one past T) and its lane.
  let i = tid / L;
  let lane = tid % L;
  let token = firstToken + min(i, queries - 1u);
  for (var e = tid; e < TQ * D4; e += WG) {
    qs[(e / D4) * RS + e % D4] = q[((firstToken + min(e / D4, queries - 1u)) * H + head) * D4 + e % D4];
  }
  // The tile's last token sees up to its own column; every later one is hidden.
  let visible = min(S, step.column + t0 + queries);
  // This workgroup's share of them: all, or its split's whole blocks of TK (the last split's may be short, or empty).
  let splitColumns = ((visible + groups.z * TK - 1u) / (groups.z * TK)) * TK;
  let firstColumn = min(wg.z * splitColumns, visible);
  let columns = min(visible, firstColumn + splitColumns);
  ${forwardWalk(
    tiles,
    {
      key: (column, d4) => `keys[base + (${column}) * D4 + ${d4}]`,
      value: (column, d4) => `values[base + (${column}) * D4 + ${d4}]`,
      mask: (column) => `mask[token * S + ${column}]`,
    },
    false,
    'firstColumn',
  )}
  if (i < queries) {${
    columnParts
      ? `
    // This split's part (COLUMN_PART floats, a whole number of vec4s): the sums, then the running maximum and sum.
    let at = ((wg.z * step.tokens + firstToken + i) * H + head) * ${COLUMN_PART / 4}u;
    out[at + lane] = acc0;
    out[at + lane + L] = acc1;
    if (lane == 0u) { out[at + ${MAX_HEAD_DIM / 4}u] = vec4<f32>(runningMax, total, 0.0, 0.0); }`
      : `
    let at = ((firstToken + i) * H + head) * D4;
    out[at + lane] = acc0 / total;
    out[at + lane + L] = acc1 / total;`
  }
  }
}`;
}

/**
 * A decoding step's RoPE and attention in one program (one new token a row, so the step's
 * tokens are its rows): as attentionShader, each workgroup first doing RoPE's work for its
 * token from the q|k|v product's `splits` partial sums (ropeStoreShader's qkvPair): q of its
 * head into workgroup memory, and the new column's k and v of its KV head. The KV group's first
 * query head writes that column into the cache; every head reads the cached columns before it
 * from the cache and folds the new one in last from its own copy, so no workgroup reads what
 * another writes. The k and v of the new column are computed once per query head rather than
 * once per KV head: 3 H D sums of the splits a token instead of RoPE's (H + 2 KV) D, read
 * where the q|k|v product just wrote them, for one dispatch (and its barrier) fewer a layer.
 * With `qkNormEps` (Qwen3, Gemma 3), q and the new k are RMSNorm'd by the layer's q_norm and
 * k_norm (the binding after the others) before they are rotated.
 */
export function ropeAttentionShader(headDim: number, splits: number, qkNormEps: number | null = null): string {
  return attentionProgram(headDim, { splits, qkNormEps, columnParts: false });
}

/**
 * ropeAttentionShader with each token's cached columns split among the grid's z workgroups
 * (FlashDecoding): a decoding step of a few rows makes only rows x heads workgroups, each
 * walking every cached column of its row in turn, so a long cache leaves most of the GPU idle
 * while a handful of workgroups walk it. Workgroup z takes its share of the columns (whole
 * blocks of WORKGROUP; the last one also folds in the new column) and writes, where
 * ropeAttentionShader writes the output, its unnormalised sum of values, running maximum and
 * running sum: COLUMN_PART floats a (split, token, head), `out` [splits, tokens, H,
 * COLUMN_PART]. combineColumnsShader adds the parts up. Only split 0 writes the new column
 * into the cache, which no split reads.
 */
export function ropeAttentionColumnsShader(headDim: number, splits: number, qkNormEps: number | null = null): string {
  return attentionProgram(headDim, { splits, qkNormEps, columnParts: true });
}

/** Floats of one column split's part of a (token, head): MAX_HEAD_DIM sums of values, then the running maximum and sum (padded to a vec4). */
export const COLUMN_PART = MAX_HEAD_DIM + 4;

/**
 * The attention output [tokens, H, D] from ropeAttentionColumnsShader's `splits` parts of each
 * (token, head): each part's sums scaled by exp(its maximum - the largest), divided by the
 * parts' sums scaled alike, as FlashAttention's online softmax adds two blocks. One workgroup a
 * (head, token), the grid's x the heads.
 */
export function combineColumnsShader(headDim: number, splits: number): string {
  return `${STEP_UNIFORM}
@group(0) @binding(1) var<storage, read> parts : array<f32>;
@group(0) @binding(2) var<storage, read_write> out : array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  const D : u32 = ${headDim}u;
  let H = groups.x;
  let head = wg.x;
  let token = wg.y;
  var scales : array<f32, ${splits}>;
  var largest = -3.402823e+38;
  for (var s = 0u; s < ${splits}u; s++) {
    largest = max(largest, parts[((s * step.tokens + token) * H + head) * ${COLUMN_PART}u + ${MAX_HEAD_DIM}u]);
  }
  var total = 0.0;
  for (var s = 0u; s < ${splits}u; s++) {
    let at = ((s * step.tokens + token) * H + head) * ${COLUMN_PART}u + ${MAX_HEAD_DIM}u;
    scales[s] = exp(parts[at] - largest);
    total += scales[s] * parts[at + 1u];
  }
  for (var d = tid; d < D; d += ${WORKGROUP}u) {
    var sum = 0.0;
    for (var s = 0u; s < ${splits}u; s++) {
      sum += scales[s] * parts[((s * step.tokens + token) * H + head) * ${COLUMN_PART}u + d];
    }
    out[(token * H + head) * D + d] = sum / total;
  }
}`;
}

/**
 * The binding of a layer's q_norm then k_norm weights [2 D] (Qwen3's and Gemma 3's RMSNorm of
 * each q and k head before RoPE), and qNorm(d) and kNorm(d) reading them.
 */
const HEAD_NORM_BINDINGS = (binding: number) => `@group(0) @binding(${binding}) var<storage, read> headNorm : array<f32>;
fn qNorm(d : u32) -> f32 { return headNorm[d]; }
fn kNorm(d : u32) -> f32 { return headNorm[layer.headDim + d]; }`;

/** WGSL for a float literal (a whole number gets its ".0", or WGSL would read it as an integer). */
export const wgslFloat = (x: number) => (Number.isInteger(x) ? `${x}.0` : `${x}`);

/**
 * ropeAttentionShader's q, new key and new value with Qwen3's head norms: the token's q head,
 * its KV head's k and v from the splits, then each of q and k RMSNorm'd over its D values
 * (times qNorm or kNorm) and rotated in place, as HeadNorms then RoPE do.
 */
const ropeNormedQueryKeyValue = `  for (var p = tid; p < 3u * half; p += ${WORKGROUP}u) {
    let j = p % half;
    let which = p / half;
    let x = qkvPair(token, select(select(H + layer.kvHeads + kvHead, H + kvHead, which == 1u), head, which == 0u), j);
    if (which == 0u) {
      query[j] = x.x;
      query[j + half] = x.y;
    } else if (which == 1u) {
      newKey[j] = x.x;
      newKey[j + half] = x.y;
    } else {
      newValue[j] = x.x;
      newValue[j + half] = x.y;
    }
  }
  workgroupBarrier();
  var querySquares = 0.0;
  var keySquares = 0.0;
  for (var d = tid; d < D; d += ${WORKGROUP}u) {
    querySquares += query[d] * query[d];
    keySquares += newKey[d] * newKey[d];
  }
  let queryScale = inverseSqrt(reduceSum(tid, querySquares) / f32(D) + EPS);
  let keyScale = inverseSqrt(reduceSum(tid, keySquares) / f32(D) + EPS);
  for (var j = tid; j < half; j += ${WORKGROUP}u) {
    let q = rotate(vec2<f32>(query[j] * queryScale * qNorm(j), query[j + half] * queryScale * qNorm(j + half)), token * 4u * half, j);
    query[j] = q.x;
    query[j + half] = q.y;
    let k = rotate(vec2<f32>(newKey[j] * keyScale * kNorm(j), newKey[j + half] * keyScale * kNorm(j + half)), (token * 4u + 2u) * half, j);
    newKey[j] = k.x;
    newKey[j + half] = k.y;
  }`;

/**
 * The bindings every attention program shares (the pipeline layouts `attention` and
 * `ropeAttention`, through binding 6): q (with `rope`, the q|k|v product's splits), the cache's
 * keys and values (written with `rope`), the mask and the output.
 */
function attentionBindings(rope: boolean): string {
  const cache = rope ? 'read_write' : 'read';
  return `${STEP_UNIFORMS}
@group(0) @binding(2) var<storage, read> ${rope ? 'qkv' : 'q'} : array<f32>;
@group(0) @binding(3) var<storage, ${cache}> keys : array<f32>;
@group(0) @binding(4) var<storage, ${cache}> values : array<f32>;
@group(0) @binding(5) var<storage, read> mask : array<f32>;
@group(0) @binding(6) var<storage, read_write> out : array<f32>;`;
}

/**
 * attentionShader, or with `rope` (the q|k|v product's splits, Qwen3's q/k norm epsilon where
 * the model has them, and whether the grid's z splits the columns) ropeAttentionShader or
 * ropeAttentionColumnsShader.
 */
function attentionProgram(headDim: number, rope: { splits: number; qkNormEps: number | null; columnParts: boolean } | null): string {
  const qkNorm = rope !== null && rope.qkNormEps !== null;
  const parts = rope?.columnParts ?? false;
  return `${attentionBindings(rope !== null)}
${rope ? `@group(0) @binding(7) var<storage, read> tables : array<f32>;\n@group(0) @binding(8) var<storage, read> bias : array<f32>;\n${qkvPairWgsl(rope.splits)}` : ''}
${qkNorm ? `${HEAD_NORM_BINDINGS(9)}\nconst EPS : f32 = ${wgslFloat(rope.qkNormEps as number)};` : ''}

const DIMS_PER_THREAD : u32 = ${MAX_HEAD_DIM / WORKGROUP}u;
var<workgroup> query : array<f32, ${MAX_HEAD_DIM}>;
${rope ? `var<workgroup> newKey : array<f32, ${MAX_HEAD_DIM}>;\nvar<workgroup> newValue : array<f32, ${MAX_HEAD_DIM}>;` : ''}
var<workgroup> weights : array<f32, ${WORKGROUP}>;
${WORKGROUP_REDUCTIONS_WGSL}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let H = layer.heads;
  const D : u32 = ${headDim}u;
  let S = step.columns;
  let head = wg.x;
  let token = wg.y;
  let row = token / step.perRow;
  let kvHead = head / (H / layer.kvHeads);
  let base = (row * layer.kvHeads + kvHead) * layer.capacity * D;
  let qBase = (token * H + head) * D;
${
  rope
    ? `  let half = D / 2u;
${qkNorm ? ropeNormedQueryKeyValue : `  for (var p = tid; p < 3u * half; p += ${WORKGROUP}u) {
    let j = p % half;
    if (p < half) {
      let x = rotate(qkvPair(token, head, j), token * 4u * half, j);
      query[j] = x.x;
      query[j + half] = x.y;
    } else if (p < 2u * half) {
      let x = rotate(qkvPair(token, H + kvHead, j), (token * 4u + 2u) * half, j);
      newKey[j] = x.x;
      newKey[j + half] = x.y;
    } else {
      let x = qkvPair(token, H + layer.kvHeads + kvHead, j);
      newValue[j] = x.x;
      newValue[j + half] = x.y;
    }
  }`}
  workgroupBarrier();
  if (head % (H / layer.kvHeads) == 0u${parts ? ' && wg.z == 0u' : ''}) {
    for (var d = tid; d < D; d += ${WORKGROUP}u) {
      keys[base + step.column * D + d] = newKey[d];
      values[base + step.column * D + d] = newValue[d];
    }
  }
  // The loop reads the columns before the new one${parts ? ": this split's share of them, whole blocks" : ''}.
${
  parts
    ? `  let share = (step.column + groups.z * ${WORKGROUP}u - 1u) / (groups.z * ${WORKGROUP}u) * ${WORKGROUP}u;
  let first = min(step.column, wg.z * share);
  let cached = min(step.column, first + share);`
    : `  let first = 0u;
  let cached = step.column;`
}`
    : `  for (var d = tid; d < D; d += ${WORKGROUP}u) { query[d] = q[qBase + d]; }
  workgroupBarrier();
  // The row's new tokens sit at columns step.column on, so the mask hides every column after
  // this token's own (the causal future: half a prompt chunk's pairs), which would weigh 0.
  let first = 0u;
  let cached = min(S, step.column + token % step.perRow + 1u);`
}

  var runningMax = -3.402823e+38;
  var runningSum = 0.0;
  var acc : array<f32, ${MAX_HEAD_DIM / WORKGROUP}>;
  for (var start = first; start < cached; start += ${WORKGROUP}u) {
    let s = start + tid;
    var score = -3.402823e+38;
    if (s < cached) {
      var dot = 0.0;
      for (var d = 0u; d < D; d++) { dot += query[d] * keys[base + s * D + d]; }
      score = dot + mask[token * S + s];
    }
    let newMax = max(runningMax, reduceMax(tid, score));
    let weight = select(0.0, exp(score - newMax), s < cached);
    weights[tid] = weight;
    let rescale = exp(runningMax - newMax);
    runningSum = runningSum * rescale + reduceSum(tid, weight);
    runningMax = newMax;
    let tile = min(${WORKGROUP}u, cached - start);
    for (var i = 0u; i < DIMS_PER_THREAD; i++) {
      let d = tid + i * ${WORKGROUP}u;
      if (d < D) {
        var sum = acc[i] * rescale;
        for (var t = 0u; t < tile; t++) { sum += weights[t] * values[base + (start + t) * D + d]; }
        acc[i] = sum;
      }
    }
    workgroupBarrier();
  }
${
  rope
    ? `  // The new column, from this workgroup's own k and v${parts ? ', in the last split' : ''}.
  ${parts ? 'if (wg.z == groups.z - 1u) {' : '{'}
  var dotPart = 0.0;
  for (var d = tid; d < D; d += ${WORKGROUP}u) { dotPart += query[d] * newKey[d]; }
  let score = reduceSum(tid, dotPart) + mask[token * S + step.column];
  let newMax = max(runningMax, score);
  let rescale = exp(runningMax - newMax);
  let weight = exp(score - newMax);
  runningSum = runningSum * rescale + weight;
  for (var i = 0u; i < DIMS_PER_THREAD; i++) {
    let d = tid + i * ${WORKGROUP}u;
    if (d < D) { acc[i] = acc[i] * rescale + weight * newValue[d]; }
  }
  }`
    : ''
}
${
  parts
    ? `  let part = ((wg.z * step.tokens + token) * H + head) * ${COLUMN_PART}u;
  for (var i = 0u; i < DIMS_PER_THREAD; i++) {
    let d = tid + i * ${WORKGROUP}u;
    if (d < D) { out[part + d] = acc[i]; }
  }
  if (tid == 0u) {
    out[part + ${MAX_HEAD_DIM}u] = runningMax;
    out[part + ${MAX_HEAD_DIM}u + 1u] = runningSum;
  }`
    : `  for (var i = 0u; i < DIMS_PER_THREAD; i++) {
    let d = tid + i * ${WORKGROUP}u;
    if (d < D) { out[qBase + d] = acc[i] / runningSum; }
  }`
}
}`;
}

/** Threads of the sampling workgroup: each takes a contiguous slice of the vocabulary. */
export const SAMPLE_WORKGROUP = 256;

/**
 * drawRow(row, V, tid, write): the next token of row `row` of logits [rows, V] and its
 * log-probability, drawn by one workgroup of SAMPLE_WORKGROUP threads: greedy at temperature 0
 * (the first among equal maxima) with log-softmax(logits)[id]; else, with weights
 * w_i = exp((logit_i - max) / temperature), the first token whose running sum of weights passes
 * u times the total, with log(w_id / total). Each thread takes a contiguous slice of the
 * vocabulary; the workgroup reduces the maximum and the slices' sums, and thread 0 walks the
 * slice sums, then the slice where the draw falls, and writes (id, logprob) to result[row]
 * where `write`. draws [rows, 2]: temperature, u. Needs the globals logits, draws and result
 * (f32 arrays): the program that includes it declares them (sample.ts on tfjs's bindings,
 * SAMPLE_SHADER on its own).
 */
export const DRAW_ROW_WGSL = `
var<workgroup> drawValues : array<f32, ${SAMPLE_WORKGROUP}>;
var<workgroup> drawIds : array<u32, ${SAMPLE_WORKGROUP}>;

fn drawRow(row : u32, V : u32, tid : u32, write : bool) {
  let base = row * V;
  let temperature = draws[row * 2u];
  let greedy = temperature <= 0.0;
  let scale = select(1.0 / temperature, 1.0, greedy);
  let slice = (V + ${SAMPLE_WORKGROUP - 1}u) / ${SAMPLE_WORKGROUP}u;
  let lo = min(tid * slice, V);
  let hi = min(lo + slice, V);

  var best = -3.402823e+38;
  var bestId = V;
  for (var i = lo; i < hi; i++) {
    let value = logits[base + i];
    if (value > best) { best = value; bestId = i; }
  }
  drawValues[tid] = best;
  drawIds[tid] = bestId;
  workgroupBarrier();
  for (var n = ${SAMPLE_WORKGROUP / 2}u; n > 0u; n = n / 2u) {
    if (tid < n) {
      let other = drawValues[tid + n];
      let otherId = drawIds[tid + n];
      if (other > drawValues[tid] || (other == drawValues[tid] && otherId < drawIds[tid])) {
        drawValues[tid] = other;
        drawIds[tid] = otherId;
      }
    }
    workgroupBarrier();
  }
  let top = drawValues[0];
  let argmax = drawIds[0];
  workgroupBarrier();

  var sum = 0.0;
  for (var i = lo; i < hi; i++) { sum += exp((logits[base + i] - top) * scale); }
  drawValues[tid] = sum;
  workgroupBarrier();

  if (write && tid == 0u) {
    var total = 0.0;
    for (var t = 0u; t < ${SAMPLE_WORKGROUP}u; t++) { total += drawValues[t]; }
    var id = argmax;
    var logprob = logits[base + argmax] - top - log(total);
    if (!greedy) {
      var rest = draws[row * 2u + 1u] * total;
      // The slice where the draw falls: the last one with weight if rounding runs past the end.
      var chosen = 0u;
      for (var t = 0u; t < ${SAMPLE_WORKGROUP}u; t++) {
        if (drawValues[t] > 0.0) { chosen = t; }
        if (rest < drawValues[t]) { break; }
        rest -= drawValues[t];
      }
      let first = chosen * slice;
      let last = min(first + slice, V);
      var weight = 0.0;
      for (var i = first; i < last; i++) {
        let w = exp((logits[base + i] - top) * scale);
        if (w > 0.0) {
          id = i;
          weight = w;
          rest -= w;
          if (rest < 0.0) { break; }
        }
      }
      logprob = log(weight) - log(total);
    }
    result[row * 2u] = f32(id);
    result[row * 2u + 1u] = logprob;
  }
}`;

/**
 * The next token of each row of logits [rows, V] (drawRow), one workgroup a row; result
 * [rows, 2] as f32 (id, logprob). Each row's id is also written to ids[row], where the next
 * step's embeddings read their tokens: a step fed the tokens its last step drew needs nothing
 * from the host (WebGpuDecodeStep.stepsDrawn).
 */
export const SAMPLE_SHADER = `
struct Sample { rows : u32, vocab : u32, pad0 : u32, pad1 : u32 }
@group(0) @binding(0) var<uniform> dims : Sample;
@group(0) @binding(1) var<storage, read> logits : array<f32>;
@group(0) @binding(2) var<storage, read> draws : array<f32>;
@group(0) @binding(3) var<storage, read_write> result : array<f32>;
@group(0) @binding(4) var<storage, read_write> ids : array<u32>;
${DRAW_ROW_WGSL}

@compute @workgroup_size(${SAMPLE_WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  drawRow(wg.x, dims.vocab, tid, true);
  if (tid == 0u) { ids[wg.x] = u32(result[wg.x * 2u]); }
}`;
