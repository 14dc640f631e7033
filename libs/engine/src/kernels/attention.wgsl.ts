/**
 * WGSL that the tiled attention programs share: the prefill's in the encoded decoding step
 * (decode-step.wgsl.ts, promptAttentionShader) and training's (prompt-attention.webgpu.ts).
 */

/**
 * FlashAttention's online softmax for query `tid` of a tile, over the scores of a block of TK
 * keys in workgroup memory `ps` [queries, TK] (the `tile` first of them real): the query's
 * running maximum and sum (`runningMax`, `runningSum`) brought up to date, the block's weights
 * exp(score - max) left in ps, and `scale`, how much the running sums shrink, for the caller.
 * The backward programs' pass that finds each query's log-sum-exp uses it.
 */
export const ONLINE_SOFTMAX = `var newMax = runningMax[tid];
      for (var c = 0u; c < tile; c++) { newMax = max(newMax, ps[tid * TK + c]); }
      var sum = 0.0;
      for (var c = 0u; c < TK; c++) {
        let weight = select(0.0, exp(ps[tid * TK + c] - newMax), c < tile);
        ps[tid * TK + c] = weight;
        sum += weight;
      }
      let scale = exp(runningMax[tid] - newMax);
      runningSum[tid] = runningSum[tid] * scale + sum;
      runningMax[tid] = newMax;`;

/** The tiles of the attention forward below for one head dimension: query tokens and keys a block, threads (lanes) a query, threads a workgroup. */
export interface ForwardTiles {
  TQ: number;
  TK: number;
  lanes: number;
  workgroup: number;
}

/** Largest head dimension the forward takes. */
const MAX_FORWARD_HEAD_DIM = 256;
/** Workgroup memory every WebGPU device offers a program (maxComputeWorkgroupStorageSize's default). */
const WORKGROUP_MEMORY = 16384;
/** Workgroup memory left to the program around the forward, 8 bytes a query and 16 more (the training forward's visible columns). */
const CALLERS_BYTES_A_QUERY = 8;

/**
 * The forward's tiles for head dimension D, or null where D is not a multiple of 8 up to 256.
 * Each query has D / 8 lanes, so that each keeps two vec4s of the query's output; about 128
 * threads a workgroup, TQ = 128 / lanes queries of one head. TK, the keys staged at a time, is
 * the most of 32, 16 and 8 for which the staged queries and keys (rows of D + 4 floats), the
 * block's weights, the lanes' partial maxima and the caller's own (CALLERS_BYTES_A_QUERY) fit
 * WebGPU's default 16 KB of workgroup memory: 16 queries and 32 keys for heads of 64, 8 and 16
 * for 128, 4 and 8 for 256.
 */
export function forwardTiles(headDim: number): ForwardTiles | null {
  if (headDim % 8 !== 0 || headDim > MAX_FORWARD_HEAD_DIM) return null;
  const lanes = headDim / 8;
  const TQ = Math.floor(128 / lanes);
  const workgroup = TQ * lanes;
  const bytes = (TK: number) => 16 * (TQ + TK) * (headDim / 4 + 1) + 4 * TQ * TK + 4 * workgroup + CALLERS_BYTES_A_QUERY * TQ + 16;
  const TK = [32, 16, 8].find((tk) => bytes(tk) <= WORKGROUP_MEMORY);
  return TK === undefined ? null : { TQ, TK, lanes, workgroup };
}

/**
 * The forward's constants and workgroup memory, for a program whose workgroup has the tiles'
 * `workgroup` threads: the tile's queries staged in `qs` and a block of keys (then values) in
 * `kv`, both as rows of RS vec4s (D + 4 floats, so that a query's lanes, reading one vec4 of
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
// The block's keys, then its values.
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
 * The forward's walk over the first `columns` keys (a u32 the same for the whole workgroup), as
 * FlashAttention does it on CUDA-style cores, for a workgroup whose thread `tid` is lane `lane`
 * of query `i` of the tile, the tile's queries already staged in qs (forwardDeclarations). Per
 * block of TK keys: the keys staged; each lane's scores q . k + mask of the block's keys lane,
 * lane + L, ... (dot products of vec4s, independent of each other); the query's block maximum
 * from its lanes' partial maxima; the weights exp(score - running max) into ps, the running
 * sums rescaled as the maximum grows (online softmax); the values staged where the keys were;
 * each lane's output vec4s lane and lane + L summed over the block's weights. Each lane keeps its
 * part of the query's running sum; the parts are added at the end. Leaves `acc0` and `acc1`
 * (the lane's two vec4s of the output's running sums), `runningMax` and `total` (the query's
 * sum of exp(score - runningMax)): the output is acc / total, the log-sum-exp runningMax +
 * log(total).
 */
export function forwardWalk(tiles: ForwardTiles, inputs: ForwardInputs): string {
  const KEYS_A_LANE = Math.ceil(tiles.TK / tiles.lanes);
  const stage = (read: ForwardInputs['key']) => `for (var e = tid; e < TK * D4; e += WG) {
      kv[(e / D4) * RS + e % D4] = ${read('start + min(e / D4, tile - 1u)', 'e % D4')};
    }`;
  return `var runningMax = LOWEST;
  var runningSum = 0.0;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  for (var start = 0u; start < columns; start += TK) {
    let tile = min(TK, columns - start);
    ${stage(inputs.key)}
    workgroupBarrier();
    var scores : array<f32, ${KEYS_A_LANE}>;
    for (var j = 0u; j < ${KEYS_A_LANE}u; j++) { scores[j] = 0.0; }
    for (var d = 0u; d < D4; d++) {
      let qv = qs[i * RS + d];
      for (var j = 0u; j < ${KEYS_A_LANE}u; j++) { scores[j] += dot(qv, kv[min(lane + j * L, TK - 1u) * RS + d]); }
    }
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
    var sum = 0.0;
    for (var j = 0u; j < ${KEYS_A_LANE}u; j++) {
      let c = lane + j * L;
      let weight = select(0.0, exp(scores[j] - newMax), c < tile);
      if (c < TK) { ps[i * TK + c] = weight; }
      sum += weight;
    }
    runningSum = runningSum * scale + sum;
    acc0 *= scale;
    acc1 *= scale;
    // Every thread has read the keys: the values take their place.
    ${stage(inputs.value)}
    workgroupBarrier();
    // Columns past the block's last real one weigh 0 (their values repeat the last's).
    for (var c = 0u; c < TK; c++) {
      let weight = ps[i * TK + c];
      acc0 += weight * kv[c * RS + lane];
      acc1 += weight * kv[c * RS + lane + L];
    }
    workgroupBarrier();
  }
  part[tid] = runningSum;
  workgroupBarrier();
  var total = 0.0;
  for (var l = 0u; l < L; l++) { total += part[i * L + l]; }`;
}
