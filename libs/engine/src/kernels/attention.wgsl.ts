/**
 * WGSL that the tiled attention programs share: the prefill's in the encoded decoding step
 * (decode-step.wgsl.ts, promptAttentionShader) and training's (prompt-attention.webgpu.ts).
 */
import { WORKGROUP_MEMORY } from './webgpu-program';

/**
 * The tiles of a lane-based attention program for one head dimension: `rows` of one side (a
 * workgroup's queries; the dk/dv program's keys), D / 8 threads (lanes) each, and `block`, the
 * rows of the other side staged in workgroup memory at a time. Each lane keeps two vec4s of its
 * row's output, `lane` and `lane + lanes`.
 */
export interface LaneTiles {
  rows: number;
  block: number;
  lanes: number;
  workgroup: number;
}

/** The tiles of the attention forward (and dq's) for one head dimension: query tokens and keys a block, threads (lanes) a query, threads a workgroup. */
export interface ForwardTiles {
  TQ: number;
  TK: number;
  lanes: number;
  workgroup: number;
}

/** Largest head dimension the programs take. */
const MAX_HEAD_DIM = 256;

/**
 * Tiles for head dimension D whose workgroup memory, `bytes(rows, block, RS, workgroup)` with RS
 * a staged row's stride in vec4s (D + 4 floats, so that lanes reading one vec4 of consecutive
 * rows fall in different banks), fits `memory` (WebGPU's default 16 KB unless the program is
 * sized to its device: webgpu-program.ts, workgroupMemoryLimit): about 128 threads a workgroup
 * with the most of 32, 16, 8 and 4 rows a block, or 64 where that stages more of them at a time
 * (up to the lanes a row: a block of fewer rows than lanes has each row's dot products shared
 * among lanes, sharingLanes, their parts added through workgroup memory). Null where D is not a
 * multiple of 8 up to 256.
 */
function laneTiles(headDim: number, bytes: (rows: number, block: number, RS: number, workgroup: number) => number, memory: number): LaneTiles | null {
  if (headDim % 8 !== 0 || headDim > MAX_HEAD_DIM) return null;
  const lanes = headDim / 8;
  let best: LaneTiles | null = null;
  for (const threads of [128, 64]) {
    const rows = Math.max(1, Math.floor(threads / lanes));
    const workgroup = rows * lanes;
    const block = [32, 16, 8, 4].find((b) => bytes(rows, b, headDim / 4 + 1, workgroup) <= memory);
    // Rows of the block a lane's dot products cover whole, up to one a lane: min(block, lanes).
    if (block !== undefined && (best === null || Math.min(block, lanes) > Math.min(best.block, lanes))) best = { rows, block, lanes, workgroup };
  }
  return best;
}

/** Tiles of a query-side program (forward, dq) as ForwardTiles. */
function queryTiles(tiles: LaneTiles | null): ForwardTiles | null {
  return tiles && { TQ: tiles.rows, TK: tiles.block, lanes: tiles.lanes, workgroup: tiles.workgroup };
}

/**
 * The forward's tiles for head dimension D (laneTiles) in `memory` bytes of workgroup memory:
 * the staged queries and keys, the block's weights, a float a thread (the lanes' partial maxima,
 * their parts of shared dot products: sharingLanes), and 8 bytes a query and 16 more for the
 * caller (the training forward's visible columns). In 32 KB, 16 queries and 32 keys for heads of
 * 64, 8 and 32 for 128, 4 and 16 for 256; in 16 KB, 16 and 32, 8 and 16, 4 and 8.
 */
export function forwardTiles(headDim: number, memory = WORKGROUP_MEMORY): ForwardTiles | null {
  return queryTiles(laneTiles(headDim, (TQ, TK, RS, WG) => 16 * (TQ + TK) * RS + 4 * TQ * TK + 4 * WG + 8 * TQ + 16, memory));
}

/**
 * dq's tiles (laneTiles) in `memory` bytes of workgroup memory: as the forward's, with dO's
 * rows staged beside q's, a second block of TQ x TK floats (P dP beside P), and a query's
 * log-sum-exp. In 32 KB, 16 queries and 32 keys for heads of 64, 8 and 32 for 128, 4 and 16
 * for 256; in 16 KB, 16 and 16, 4 and 16, 2 and 8.
 */
export function queryGradientTiles(headDim: number, memory = WORKGROUP_MEMORY): ForwardTiles | null {
  return queryTiles(laneTiles(headDim, (TQ, TK, RS, WG) => 16 * (2 * TQ + TK) * RS + 8 * TQ * TK + 4 * WG + 12 * TQ + 16, memory));
}

/**
 * The dk/dv program's tiles (laneTiles) in `memory` bytes of workgroup memory: `rows` keys a
 * workgroup, their k and v staged, and `block` queries at a time, their q and dO staged, with
 * two KT x QT blocks (P and dS), three floats a query, and where lanes share a query's dot
 * products (sharingLanes) two floats a thread for their parts. In 32 KB, 16 keys and 32 queries
 * for heads of 64, 8 and 16 for 128, 4 and 8 for 256; in 16 KB, 16 and 8, 4 and 8, 2 and 4.
 */
export function keyGradientTiles(headDim: number, memory = WORKGROUP_MEMORY): LaneTiles | null {
  return laneTiles(
    headDim,
    (KT, QT, RS, WG) => 16 * (2 * KT + 2 * QT) * RS + 8 * KT * QT + 12 * QT + 16 + (sharingLanes(headDim / 8, QT) > 1 ? 8 * WG : 0),
    memory,
  );
}

/**
 * The lanes that share each of a block's rows in a lane-based program's dot products: where the
 * block has fewer rows than a row of the workgroup's own side has lanes (heads of 256: 32 lanes
 * against blocks of 8 or 4), floor(lanes / block) of them, each summing a slice of the head's
 * vec4s (sharedDots), so that every lane works where all but `block` of them would repeat the
 * block's last row; otherwise 1, each lane's rows of the block taken whole.
 */
export function sharingLanes(lanes: number, block: number): number {
  return block < lanes ? Math.floor(lanes / block) : 1;
}

/**
 * A lane's slice of the block's dot products where `share` lanes share each row (sharingLanes,
 * `share` > 1): lane l takes the block's row l % `block` (a WGSL u32 constant's name) and the
 * (l / block)-th slice of the D4 vec4s, `add(d, r)` adding vec4 d of row r to its sums; lanes
 * past share x block add nothing.
 */
export function sharedDots(share: number, block: string, add: (d: string, r: string) => string): string {
  return `if (lane < ${share}u * ${block}) {
      let r = lane % ${block};
      let slice = (D4 + ${share - 1}u) / ${share}u;
      let first = (lane / ${block}) * slice;
      for (var d = first; d < min(first + slice, D4); d++) { ${add('d', 'r')} }
    }`;
}

/**
 * The forward's constants and workgroup memory, for a program whose workgroup has the tiles'
 * `workgroup` threads (the forward's, or dq's): the tile's queries staged in `qs` and a block
 * of keys or values in `kv`, both as rows of RS vec4s (D + 4 floats, so that a query's lanes, reading one vec4 of
 * consecutive keys, fall in different banks); the block's weights `ps`, a row a query; `part`,
 * a value a thread (partial maxima, then parts of the running sums).
 */
export function forwardDeclarations(headDim: number, tiles: ForwardTiles): string {
  const { TQ, TK, lanes, workgroup } = tiles;
  const RS = headDim / 4 + 1;
  return `const LOWEST : f32 = -3.402823e+38;
// vec4s of a head's row, and a staged row's stride in vec4s.
const D4 : u32 = ${headDim / 4}u;
const RS : u32 = ${RS}u;
const TQ : u32 = ${TQ}u;
const TK : u32 = ${TK}u;
const L : u32 = ${lanes}u;
const WG : u32 = ${workgroup}u;
var<workgroup> qs : array<vec4<f32>, ${TQ * RS}>;
// The block's keys, then its values (dq: values, then keys).
var<workgroup> kv : array<vec4<f32>, ${TK * RS}>;
var<workgroup> ps : array<f32, ${TQ * TK}>;
var<workgroup> part : array<f32, ${workgroup}>;`;
}

/** Where the forward's walk reads: vec4 d4 of key or value `column` (expressions of WGSL u32s), and the mask of this thread's query at `column`. */
export interface ForwardInputs {
  key: (column: string, d4: string) => string;
  value: (column: string, d4: string) => string;
  mask: (column: string) => string;
}

/**
 * A block of TK keys (or values) staged in kv as rows of RS vec4s, row c the block's column
 * start + c (`read` gives vec4 d4 of a column; a block's rows past its `tile` repeat its last),
 * by a workgroup of WG threads.
 */
export const stageBlock = (read: (column: string, d4: string) => string) => `for (var e = tid; e < TK * D4; e += WG) {
      kv[(e / D4) * RS + e % D4] = ${read('start + min(e / D4, tile - 1u)', 'e % D4')};
    }`;

/**
 * Lane `lane` of row i's dot products of `rows`' row i (staged as forwardDeclarations lays
 * them out) with the block's staged rows lane, lane + L, ... (clamped to the block), into the
 * new array `out`: vec4 dot products, independent of each other. Where lanes share the block's
 * rows (sharingLanes: fewer of them than lanes), each lane sums its slice of one row
 * (sharedDots), the parts meet in `part`, and each lane adds up those of its row: two barriers,
 * so the caller must be in the workgroup's uniform control flow, and `part` is free again after.
 */
export function laneDots(rows: string, out: string, tiles: ForwardTiles): string {
  const share = sharingLanes(tiles.lanes, tiles.TK);
  if (share > 1) {
    return `var ${out} : array<f32, 1>;
    {
      var slicePart = 0.0;
      ${sharedDots(share, 'TK', (d, r) => `slicePart += dot(${rows}[i * RS + ${d}], kv[${r} * RS + ${d}]);`)}
      part[tid] = slicePart;
      workgroupBarrier();
      ${out}[0] = 0.0;
      for (var s = 0u; s < ${share}u; s++) { ${out}[0] += part[i * L + s * TK + min(lane, TK - 1u)]; }
      workgroupBarrier();
    }`;
  }
  const n = Math.ceil(tiles.TK / tiles.lanes);
  return `var ${out} : array<f32, ${n}>;
    for (var j = 0u; j < ${n}u; j++) { ${out}[j] = 0.0; }
    for (var d = 0u; d < D4; d++) {
      let row = ${rows}[i * RS + d];
      for (var j = 0u; j < ${n}u; j++) { ${out}[j] += dot(row, kv[min(lane + j * L, TK - 1u) * RS + d]); }
    }`;
}

/**
 * The forward's walk over the keys from `from` (the first, unless given) up to `columns` (WGSL
 * u32s, the same for the whole workgroup), as FlashAttention does it on CUDA-style cores, for a
 * workgroup whose thread `tid` is lane `lane` of query `i` of the tile, the tile's queries
 * already staged in qs (forwardDeclarations). Per block of TK keys: the keys staged; each lane's
 * scores q . k + mask of the block's keys lane, lane + L, ... (laneDots); the query's block
 * maximum from its lanes' partial maxima; the weights exp(score - running max) into ps, the
 * running sums rescaled as the maximum grows (online softmax); the values staged where the keys
 * were; each lane's output vec4s lane and lane + L summed over the block's weights. Each lane
 * keeps its part of the query's running sum; the parts are added at the end. Leaves `acc0` and
 * `acc1` (the lane's two vec4s of the output's running sums), `runningMax` and `total` (the
 * query's sum of exp(score - runningMax)): the output is acc / total, the log-sum-exp runningMax
 * + log(total). With `statisticsOnly`, the values are not read and only runningMax and total are
 * left (the backward's log-sum-exp where the forward did not save it).
 */
export function forwardWalk(tiles: ForwardTiles, inputs: ForwardInputs, statisticsOnly = false, from = '0u'): string {
  const KEYS_A_LANE = Math.ceil(tiles.TK / tiles.lanes);
  const values = `for (var j = 0u; j < ${KEYS_A_LANE}u; j++) {
      let c = lane + j * L;
      if (c < TK) { ps[i * TK + c] = weights[j]; }
    }
    acc0 *= scale;
    acc1 *= scale;
    // Every thread has read the keys: the values take their place.
    ${stageBlock(inputs.value)}
    workgroupBarrier();
    // Columns past the block's last real one weigh 0 (their values repeat the last's).
    for (var c = 0u; c < TK; c++) {
      let weight = ps[i * TK + c];
      acc0 += weight * kv[c * RS + lane];
      acc1 += weight * kv[c * RS + lane + L];
    }`;
  return `var runningMax = LOWEST;
  var runningSum = 0.0;${statisticsOnly ? '' : '\n  var acc0 = vec4<f32>(0.0);\n  var acc1 = vec4<f32>(0.0);'}
  for (var start = ${from}; start < columns; start += TK) {
    let tile = min(TK, columns - start);
    ${stageBlock(inputs.key)}
    workgroupBarrier();
    ${laneDots('qs', 'scores', tiles)}
    var blockMax = LOWEST;
    for (var j = 0u; j < ${KEYS_A_LANE}u; j++) {
      let c = lane + j * L;
      scores[j] = select(LOWEST, scores[j] + ${inputs.mask('start + min(c, tile - 1u)')}, c < tile);
      blockMax = max(blockMax, scores[j]);
    }
    part[tid] = blockMax;
    workgroupBarrier();
    // Every lane of a query finds the same new maximum.
    var newMax = runningMax;
    for (var l = 0u; l < L; l++) { newMax = max(newMax, part[i * L + l]); }
    let scale = exp(runningMax - newMax);
    runningMax = newMax;
    var weights : array<f32, ${KEYS_A_LANE}>;
    var sum = 0.0;
    for (var j = 0u; j < ${KEYS_A_LANE}u; j++) {
      weights[j] = select(0.0, exp(scores[j] - newMax), lane + j * L < tile);
      sum += weights[j];
    }
    runningSum = runningSum * scale + sum;
    ${statisticsOnly ? '' : values}
    workgroupBarrier();
  }
  part[tid] = runningSum;
  workgroupBarrier();
  var total = 0.0;
  for (var l = 0u; l < L; l++) { total += part[i * L + l]; }`;
}
