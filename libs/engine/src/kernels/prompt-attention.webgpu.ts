import * as tf from '@tensorflow/tfjs-core';
import { forwardDeclarations, forwardTiles, forwardWalk, ONLINE_SOFTMAX } from './attention.wgsl';
import { disposeIntermediate, flatMain, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid } from './webgpu-program';

/**
 * Attention over T new tokens per sequence on webgpu, forward and backward, as WGSL: the same
 * kernel names as the wasm kernels (prompt-attention.ts), the same layouts. q is token-major
 * [B*T, H*D] (scaled), k and v [B, KV, S, D], the mask [B or 1, 1, T, S] additive; the G = H / KV
 * query heads of a KV head read its keys.
 *
 * Every program works in tiles, as FlashAttention does: a workgroup stages a block of rows in
 * workgroup memory once and each row it loads serves the whole block on the other side, where a
 * thread a row would read every key from global memory for itself.
 *
 * The forward is one dispatch (attention.wgsl.ts, forwardWalk): a workgroup a tile of query
 * tokens of one head, D / 8 threads a token, taking the keys a block at a time: each thread's
 * scores of its own keys of the block, then softmax online over them (the running maximum m and
 * sum l of exp(score - m) of each query, the output's running sums rescaled whenever m grows);
 * the scores never exist as a tensor. The generic ops take six dispatches (two transposes, two
 * batched matMuls, the mask, a softmax).
 *
 * The backward is two dispatches, three with grouped queries, with P recomputed from q and k
 * rather than kept (ops/attention.ts, attendBackward, has the maths). The same query tiles
 * first find each query's log-sum-exp over the keys (or read it where the forward saved it:
 * SAVING_KERNEL), then in a second pass D = rowsum(P * dP) (= rowsum(dO * O)) and dq = sum_s P
 * (dP - D) k_s, and write the log-sum-exp, D and the query's visible columns beside dq. Then a workgroup a tile of KT keys of one KV head and one
 * of its G query heads walks that head's T queries QT at a time, summing its part of dk = sum P
 * (dP - D) q and dv = sum P dO; with G > 1 a last dispatch adds the G parts. The generic ops
 * take about fifteen, with [heads, T, S] tensors between them.
 *
 * A query's columns after its last visible one (the mask hides them: a prompt's causal future,
 * about half of a training step's pairs) weigh exactly 0, so a query tile stops after the last
 * column any of its queries sees, and a key tile skips the query tiles that see none of its
 * keys. A query the mask hides whole reads every column, as softmax over equal scores does.
 *
 * Workgroup memory holds the staged rows with a stride of D + 1 floats, so that threads reading
 * one dimension of consecutive rows (a score's dot products) fall in different banks; the tiles
 * are sized to WebGPU's default 16 KB of it (tilesFor).
 */
const KERNEL_NAME = 'TrainyardPromptAttention';
/** The forward that also writes each query's statistics; webgpu only (prompt-attention.ts, promptAttentionSaving). */
export const SAVING_KERNEL = 'TrainyardPromptAttentionSaving';
const BACKWARD_KERNEL = 'TrainyardPromptAttentionBackward';
const WORKGROUP = 64;
/** Mask values below this hide a column (KVCache's MASKED is -1e9), as the wasm kernels read them. */
const HIDDEN = '-1e8';

/**
 * Whether the programs take heads of `headDim`: a multiple of 8 up to 256 (the forward's tiles,
 * forwardTiles; the backward's threads keep at most 16 floats of a tile's output, or two such
 * arrays, in registers).
 */
export function webGpuAttentionTakes(headDim: number): boolean {
  return forwardTiles(headDim) !== null;
}

interface Attrs {
  T: number;
  kvHeads: number;
  groupSize: number;
}

/** Sizes compiled in (KV, G, D), and those given as uniforms (B, T, S, mask rows). */
interface Dims {
  B: number;
  KV: number;
  G: number;
  T: number;
  S: number;
  D: number;
  maskRows: number;
}

/**
 * The tiles for head dimension D: TQ queries a workgroup of the forward and dq programs (a
 * thread keeps TQ * D / 64 floats of the tile's output, 16 for the usual D of 64 and 128) with
 * TK keys staged at a time; KT keys a workgroup of the dk/dv program with QT queries at a time.
 * Each fits 16 KB of workgroup memory with its staged rows of D + 1 floats (dq's, the largest:
 * q, dO, TK keys, two TQ x TK blocks).
 */
export function tilesFor(D: number): { TQ: number; TK: number; KT: number; QT: number } {
  const TQ = D <= 64 ? 16 : D <= 128 ? 8 : 4;
  return { TQ, TK: Math.min(16, Math.floor(1024 / D)), KT: TQ, QT: TQ / 2 };
}

function dimsOf(q: tf.TensorInfo, k: tf.TensorInfo, mask: tf.TensorInfo, attrs: Attrs): Dims {
  const [B, KV, , D] = k.shape;
  return { B, KV, G: attrs.groupSize, T: attrs.T, S: mask.shape[3], D, maskRows: mask.shape[0] };
}

/** k's shape, [B, KV, S, D], and that of its gradient's parts a query head, [B, KV, G, S, D]. */
const keyShape = (d: Dims) => [d.B, d.KV, d.S, d.D];
const partsShape = (d: Dims) => [d.B, d.KV, d.G, d.S, d.D];
/** The queries' statistics [B * KV * G * T, 3]: [log-sum-exp, D = rowsum(P dP), visible columns], query t of head h of row b at (b H + h) T + t. */
const statsShape = (d: Dims) => [d.B * d.KV * d.G * d.T, 3];

function uniforms(d: Dims): MultiOutputProgram['uniforms'] {
  return [d.B, d.T, d.S, d.maskRows].map((value) => ({ type: 'uint32' as const, value }));
}

/** Floats a thread keeps of a tile of `rows` x D outputs: elements tid, tid + 64, ... */
const perThread = (rows: number, D: number) => Math.ceil((rows * D) / WORKGROUP);

/** The bindings (0 the uniforms, inputs, outputs), the sizes and the helpers every program here shares (the backward's tiles apart: backwardTiles). */
function header(d: Dims, inputs: string[], outputs: string[]): string {
  const { KV, G, D } = d;
  return `${multiOutputBindings('B : u32, T : u32, S : u32, maskRows : u32', inputs, outputs)}
const KV : u32 = ${KV}u;
const G : u32 = ${G}u;
const D : u32 = ${D}u;
const HD : u32 = ${KV * G * D}u;
// Where query (b, head, t) starts in q, dO and dq (token-major), key (b, kvh, s) in k and v.
fn queryAt(b : u32, head : u32, t : u32) -> u32 { return (b * u.T + t) * HD + head * D; }
fn keyAt(b : u32, kvh : u32, s : u32) -> u32 { return ((b * KV + kvh) * u.S + s) * D; }
fn maskAt(b : u32, t : u32, s : u32) -> f32 { return mask[(select(b, 0u, u.maskRows == 1u) * u.T + t) * u.S + s]; }`;
}

/** The backward programs' tiles (tilesFor) and workgroup size as WGSL constants, with RS, a staged row's stride in workgroup memory. */
function backwardTiles(D: number): string {
  const { TQ, TK, KT, QT } = tilesFor(D);
  return `const RS : u32 = ${D + 1}u;
const WG : u32 = ${WORKGROUP}u;
const TQ : u32 = ${TQ}u;
const TK : u32 = ${TK}u;
const KT : u32 = ${KT}u;
const QT : u32 = ${QT}u;`;
}

/** The entry point's opening: the workgroup's index w among all, returning past the last of `count`. */
const OPENING = (count: string, workgroup = WORKGROUP) => `@compute @workgroup_size(${workgroup})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let w = wg.y * groups.x + wg.x;
  if (w >= ${count}) { return; }`;

/**
 * A query tile's set-up (forward and dq): which tile w is (TQ tokens t0.. of one head, the
 * `queries` of them before T), q's rows staged in qs by `stageQueries` (a tile's last rows past T repeat its
 * last), each query's visible columns in vis (up to its last column the mask does not hide; all
 * S where it hides every one) as `visibility` finds them, and `columns`, the most any of them
 * sees: the keys the tile reads, the same for the whole workgroup. From the mask, the threads
 * read the tile's mask rows together, a column each, where a thread a query walking back from
 * the last column would wait on one read after another, S of them for a causal prompt's first
 * query.
 */
const queryTile = (visibility: string, stageQueries = STAGE_QUERIES, workgroup = WORKGROUP) => `${OPENING('u.B * KV * G * ((u.T + TQ - 1u) / TQ)', workgroup)}
  let tiles = (u.T + TQ - 1u) / TQ;
  let t0 = (w % tiles) * TQ;
  let head = (w / tiles) % (KV * G);
  let b = w / (tiles * KV * G);
  let kvh = head / G;
  let queries = min(TQ, u.T - t0);
  // Query t0 + i's row of the statistics [B * KV * G * T, 3].
  let firstRow = (b * KV * G + head) * u.T + t0;
  ${stageQueries}
  ${visibility}
  if (tid == 0u) {
    var most = 0u;
    for (var i = 0u; i < TQ; i++) { most = max(most, vis[i]); }
    tileColumns = most;
  }
  let columns = workgroupUniformLoad(&tileColumns);`;

/** The tile's queries staged in qs, a float a thread (the backward's rows of D + 1 floats). */
const STAGE_QUERIES = `for (var e = tid; e < TQ * D; e += WG) { qs[(e / D) * RS + e % D] = q[queryAt(b, head, t0 + min(e / D, queries - 1u)) + e % D]; }`;

/** The tile's queries staged in qs as vec4s, as forwardDeclarations lays them out (qVec reads them). */
const STAGE_QUERY_VECS = `for (var e = tid; e < TQ * D4; e += WG) { qs[(e / D4) * RS + e % D4] = qVec(queryAt(b, head, t0 + min(e / D4, queries - 1u)) + 4u * (e % D4)); }`;

/** Each query's visible columns from the tile's mask rows, read by all the threads together. */
const VISIBLE_FROM_MASK = `if (tid < TQ) { atomicStore(&lastVisible[tid], 0u); }
  workgroupBarrier();
  for (var e = tid; e < TQ * u.S; e += WG) {
    let c = e % u.S;
    if (maskAt(b, t0 + min(e / u.S, queries - 1u), c) >= ${HIDDEN}) { atomicMax(&lastVisible[e / u.S], c + 1u); }
  }
  workgroupBarrier();
  if (tid < TQ) {
    let n = atomicLoad(&lastVisible[tid]);
    vis[tid] = select(u.S, n, n > 0u);
  }
  workgroupBarrier();`;

const QUERY_TILE = queryTile(VISIBLE_FROM_MASK);

/** Each query's visible columns and log-sum-exp as the forward pass saved them (`saved`, its statistics). */
const QUERY_TILE_SAVED = queryTile(`if (tid < TQ) {
    let row = firstRow + min(tid, queries - 1u);
    vis[tid] = u32(saved[3u * row + 2u]);
    lse[tid] = saved[3u * row];
  }
  workgroupBarrier();`);

/** The workgroup memory QUERY_TILE fills, and the keys' block (TK rows). */
const QUERY_TILE_MEMORY = `var<workgroup> qs : array<f32, TQ * RS>;
var<workgroup> kv : array<f32, TK * RS>;
var<workgroup> ps : array<f32, TQ * TK>;
var<workgroup> vis : array<u32, TQ>;
// Each query's last visible column + 1 (0 while none is seen).
var<workgroup> lastVisible : array<atomic<u32>, TQ>;
var<workgroup> runningMax : array<f32, TQ>;
var<workgroup> runningSum : array<f32, TQ>;
var<workgroup> tileColumns : u32;
// The dot product of staged rows: a of a block, b of another.
fn dotRows(a : u32, b : u32) -> f32 {
  var sum = 0.0;
  for (var d = 0u; d < D; d++) { sum += qs[a * RS + d] * kv[b * RS + d]; }
  return sum;
}`;

/** Stages rows start.. of the KV head's `source` (k or v), `tile` of them, in kv (a block's last rows past the tile repeat its last). */
const stageKeys = (source: string) => `for (var e = tid; e < TK * D; e += WG) { kv[(e / D) * RS + e % D] = ${source}[keyAt(b, kvh, start + min(e / D, tile - 1u)) + e % D]; }`;

/** Each query's scores against the staged keys into ps (the lowest float past the tile). */
const SCORES = `for (var e = tid; e < TQ * TK; e += WG) {
      let i = e / TK;
      let c = e % TK;
      ps[e] = select(-3.402823e+38, dotRows(i, c) + maskAt(b, t0 + min(i, queries - 1u), start + c), c < tile);
    }`;

/**
 * A block of keys (start.., `tile` of them) staged, the tile's scores against them, and each
 * query's online softmax over those (ONLINE_SOFTMAX), with `after` run by the query's thread
 * (which may read its `scale`).
 */
const softmaxOverKeys = (after = '') => `${stageKeys('k')}
    workgroupBarrier();
    ${SCORES}
    workgroupBarrier();
    if (tid < TQ) {
      ${ONLINE_SOFTMAX}${after}
    }`;

/**
 * The forward (forwardWalk, over the columns the tile's queries see); `saving` (a training pass
 * that saves what its backward reads), also each query's statistics [log-sum-exp, 0, visible
 * columns], so that the backward need not find the log-sum-exp again.
 */
function forwardProgram(d: Dims, saving: boolean): MultiOutputProgram {
  const tiles = forwardTiles(d.D);
  if (tiles === null) throw new Error(`prompt attention takes no head dimension ${d.D}`);
  return {
    key: `trainyardPromptAttention${saving ? 'Saving' : ''}_${d.KV}_${d.G}_${d.D}`,
    wgsl: () => `${header(d, ['q', 'k', 'v', 'mask'], saving ? ['out', 'stats'] : ['out'])}
${forwardDeclarations(d.D, tiles)}
var<workgroup> vis : array<u32, TQ>;
// Each query's last visible column + 1 (0 while none is seen).
var<workgroup> lastVisible : array<atomic<u32>, TQ>;
var<workgroup> tileColumns : u32;
// The vec4 of q, k or v whose first float is at \`at\`.
${['q', 'k', 'v'].map((t) => `fn ${t}Vec(at : u32) -> vec4<f32> { return vec4<f32>(${t}[at], ${t}[at + 1u], ${t}[at + 2u], ${t}[at + 3u]); }`).join('\n')}
${queryTile(VISIBLE_FROM_MASK, STAGE_QUERY_VECS, tiles.workgroup)}
  // This thread's query of the tile (the tile's last real one past T) and its lane.
  let i = tid / L;
  let lane = tid % L;
  let t = t0 + min(i, queries - 1u);
  ${forwardWalk(tiles, {
    key: (column, d4) => `kVec(keyAt(b, kvh, ${column}) + 4u * (${d4}))`,
    value: (column, d4) => `vVec(keyAt(b, kvh, ${column}) + 4u * (${d4}))`,
    mask: (column) => `maskAt(b, t, ${column})`,
  })}
  if (i < queries) {
    let at = queryAt(b, head, t0 + i);
    let o0 = acc0 / total;
    let o1 = acc1 / total;
    for (var c = 0u; c < 4u; c++) {
      out[at + 4u * lane + c] = o0[c];
      out[at + 4u * (lane + L) + c] = o1[c];
    }
${
  saving
    ? `    if (lane == 0u) {
      stats[3u * (firstRow + i)] = runningMax + log(total);
      stats[3u * (firstRow + i) + 1u] = 0.0;
      stats[3u * (firstRow + i) + 2u] = f32(vis[i]);
    }`
    : ''
}
  }
}`,
    outputShapes: saving ? [[d.B * d.T, d.KV * d.G * d.D], statsShape(d)] : [[d.B * d.T, d.KV * d.G * d.D]],
    dispatch: workgroupGrid(d.B * d.KV * d.G * Math.ceil(d.T / tiles.TQ)),
    uniforms: uniforms(d),
  };
}

/**
 * dq, and each query's [log-sum-exp, D, visible columns] for the key tiles' program; with
 * `saved`, the forward's statistics give the log-sum-exp and visible columns, and the first
 * pass over the keys is not needed.
 */
function queryGradientProgram(d: Dims, saved: boolean): MultiOutputProgram {
  const { TQ } = tilesFor(d.D);
  const per = perThread(TQ, d.D);
  return {
    key: `trainyardPromptAttentionDq${saved ? 'Saved' : ''}_${d.KV}_${d.G}_${d.D}`,
    wgsl: () => `${header(d, ['q', 'k', 'v', 'mask', 'dO', ...(saved ? ['saved'] : [])], ['dq', 'stats'])}
${backwardTiles(d.D)}
${QUERY_TILE_MEMORY}
var<workgroup> dOs : array<f32, TQ * RS>;
var<workgroup> dps : array<f32, TQ * TK>;
var<workgroup> lse : array<f32, TQ>;
var<workgroup> rowD : array<f32, TQ>;
${saved ? QUERY_TILE_SAVED : QUERY_TILE}
  for (var e = tid; e < TQ * D; e += WG) { dOs[(e / D) * RS + e % D] = dO[queryAt(b, head, t0 + min(e / D, queries - 1u)) + e % D]; }
${
  saved
    ? ''
    : `  // Each query's log-sum-exp over its scores: the online softmax's running maximum and sum, from before any key.
  if (tid < TQ) {
    runningMax[tid] = -3.402823e+38;
    runningSum[tid] = 0.0;
  }
  for (var start = 0u; start < columns; start += TK) {
    let tile = min(TK, columns - start);
    ${softmaxOverKeys()}
    workgroupBarrier();
  }
  if (tid < TQ) { lse[tid] = runningMax[tid] + log(runningSum[tid]); }`
}
  if (tid < TQ) { rowD[tid] = 0.0; }
  // dq = sum_s P (dP - D) k_s = sum_s P dP k_s - D sum_s P k_s, D = sum_s P dP: both sums in one pass.
  var pdpk : array<f32, ${per}>;
  var pk : array<f32, ${per}>;
  for (var start = 0u; start < columns; start += TK) {
    let tile = min(TK, columns - start);
    ${stageKeys('v')}
    workgroupBarrier();
    for (var e = tid; e < TQ * TK; e += WG) {
      let i = e / TK;
      let c = e % TK;
      var dp = 0.0;
      for (var dd = 0u; dd < D; dd++) { dp += dOs[i * RS + dd] * kv[c * RS + dd]; }
      dps[e] = dp;
    }
    workgroupBarrier();
    ${stageKeys('k')}
    workgroupBarrier();
    for (var e = tid; e < TQ * TK; e += WG) {
      let i = e / TK;
      let c = e % TK;
      ps[e] = select(0.0, exp(dotRows(i, c) + maskAt(b, t0 + min(i, queries - 1u), start + c) - lse[i]), c < tile);
    }
    workgroupBarrier();
    if (tid < TQ) {
      var sum = rowD[tid];
      for (var c = 0u; c < tile; c++) { sum += ps[tid * TK + c] * dps[tid * TK + c]; }
      rowD[tid] = sum;
    }
    for (var j = 0u; j < ${per}u; j++) {
      let e = tid + j * WG;
      if (e < TQ * D) {
        let i = e / D;
        for (var c = 0u; c < tile; c++) {
          let p = ps[i * TK + c];
          let kd = kv[c * RS + e % D];
          pdpk[j] += p * dps[i * TK + c] * kd;
          pk[j] += p * kd;
        }
      }
    }
    workgroupBarrier();
  }
  for (var j = 0u; j < ${per}u; j++) {
    let e = tid + j * WG;
    if (e < queries * D) { dq[queryAt(b, head, t0 + e / D) + e % D] = pdpk[j] - rowD[e / D] * pk[j]; }
  }
  if (tid < queries) {
    stats[3u * (firstRow + tid)] = lse[tid];
    stats[3u * (firstRow + tid) + 1u] = rowD[tid];
    stats[3u * (firstRow + tid) + 2u] = f32(vis[tid]);
  }
}`,
    outputShapes: [[d.B * d.T, d.KV * d.G * d.D], statsShape(d)],
    dispatch: workgroupGrid(d.B * d.KV * d.G * Math.ceil(d.T / TQ)),
    uniforms: uniforms(d),
  };
}

/**
 * dk and dv, a workgroup a tile of KT keys (b, kvh, s0..) and one query head g of the KV head's
 * G, summed over that head's T queries QT at a time: [B, KV, G, S, D] each, which
 * headSumProgram adds over G (with G = 1 they are dk and dv). A workgroup for all G heads
 * would leave the GPU with B * KV * S / KT workgroups, a few hundred at training's lengths.
 */
function keyGradientProgram(d: Dims): MultiOutputProgram {
  const { KT } = tilesFor(d.D);
  const per = perThread(KT, d.D);
  return {
    key: `trainyardPromptAttentionDkv_${d.KV}_${d.G}_${d.D}`,
    wgsl: () => `${header(d, ['q', 'k', 'v', 'mask', 'dO', 'stats'], ['dk', 'dv'])}
${backwardTiles(d.D)}
var<workgroup> ks : array<f32, KT * RS>;
var<workgroup> vs : array<f32, KT * RS>;
var<workgroup> qs : array<f32, QT * RS>;
var<workgroup> dOs : array<f32, QT * RS>;
// A key's P and dS = P (dP - D) for each query of the tile, key-major.
var<workgroup> ps : array<f32, KT * QT>;
var<workgroup> dss : array<f32, KT * QT>;
var<workgroup> lse : array<f32, QT>;
var<workgroup> rowD : array<f32, QT>;
var<workgroup> vis : array<f32, QT>;
var<workgroup> seen : u32;
${OPENING('u.B * KV * G * ((u.S + KT - 1u) / KT)')}
  let tiles = (u.S + KT - 1u) / KT;
  let s0 = (w % tiles) * KT;
  let head = (w / tiles) % (KV * G);
  let kvh = head / G;
  let b = w / (tiles * KV * G);
  let keys = min(KT, u.S - s0);
  for (var e = tid; e < KT * D; e += WG) {
    let at = keyAt(b, kvh, s0 + min(e / D, keys - 1u)) + e % D;
    ks[(e / D) * RS + e % D] = k[at];
    vs[(e / D) * RS + e % D] = v[at];
  }
  var dkAcc : array<f32, ${per}>;
  var dvAcc : array<f32, ${per}>;
  let firstRow = (b * KV * G + head) * u.T;
  for (var t0 = 0u; t0 < u.T; t0 += QT) {
    let queries = min(QT, u.T - t0);
    // Skip the tile when none of its queries sees the first key (a causal mask's earlier queries).
    if (tid == 0u) {
      var sees = 0u;
      for (var i = 0u; i < queries; i++) { sees = max(sees, select(0u, 1u, f32(s0) < stats[3u * (firstRow + t0 + i) + 2u])); }
      seen = sees;
    }
    if (workgroupUniformLoad(&seen) == 0u) { continue; }
    for (var e = tid; e < QT * D; e += WG) {
      let at = queryAt(b, head, t0 + min(e / D, queries - 1u)) + e % D;
      qs[(e / D) * RS + e % D] = q[at];
      dOs[(e / D) * RS + e % D] = dO[at];
    }
    if (tid < QT) {
      let row = firstRow + t0 + min(tid, queries - 1u);
      lse[tid] = stats[3u * row];
      rowD[tid] = stats[3u * row + 1u];
      // A query past T sees nothing.
      vis[tid] = select(stats[3u * row + 2u], 0.0, tid >= queries);
    }
    workgroupBarrier();
    for (var e = tid; e < KT * QT; e += WG) {
      let c = e / QT;
      let i = e % QT;
      let s = s0 + min(c, keys - 1u);
      var p = 0.0;
      var ds = 0.0;
      if (f32(s) < vis[i]) {
        var score = 0.0;
        var dp = 0.0;
        for (var dd = 0u; dd < D; dd++) {
          score += qs[i * RS + dd] * ks[c * RS + dd];
          dp += dOs[i * RS + dd] * vs[c * RS + dd];
        }
        p = exp(score + maskAt(b, t0 + min(i, queries - 1u), s) - lse[i]);
        ds = p * (dp - rowD[i]);
      }
      ps[e] = p;
      dss[e] = ds;
    }
    workgroupBarrier();
    for (var j = 0u; j < ${per}u; j++) {
      let e = tid + j * WG;
      if (e < KT * D) {
        let c = e / D;
        for (var i = 0u; i < QT; i++) {
          dkAcc[j] += dss[c * QT + i] * qs[i * RS + e % D];
          dvAcc[j] += ps[c * QT + i] * dOs[i * RS + e % D];
        }
      }
    }
    workgroupBarrier();
  }
  for (var j = 0u; j < ${per}u; j++) {
    let e = tid + j * WG;
    if (e < keys * D) {
      // Head g's part, [B, KV, G, S, D].
      let at = (((b * KV + kvh) * G + head % G) * u.S + s0 + e / D) * D + e % D;
      dk[at] = dkAcc[j];
      dv[at] = dvAcc[j];
    }
  }
}`,
    // With one head a KV head, the parts are dk and dv.
    outputShapes: d.G === 1 ? [keyShape(d), keyShape(d)] : [partsShape(d), partsShape(d)],
    dispatch: workgroupGrid(d.B * d.KV * d.G * Math.ceil(d.S / KT)),
    uniforms: uniforms(d),
  };
}

/** dk and dv [B, KV, S, D] from keyGradientProgram's parts [B, KV, G, S, D], a thread an element summing its G. */
function headSumProgram(d: Dims): MultiOutputProgram {
  return {
    key: `trainyardPromptAttentionHeadSum_${d.G}_${d.D}`,
    wgsl: () => `${multiOutputBindings('B : u32, T : u32, S : u32, maskRows : u32', ['dkParts', 'dvParts'], ['dk', 'dv'])}
const KV : u32 = ${d.KV}u;
const G : u32 = ${d.G}u;
const D : u32 = ${d.D}u;
${flatMain(WORKGROUP)}
  let perHead = u.S * D;
  if (i >= u.B * KV * perHead) { return; }
  let first = (i / perHead) * G * perHead + i % perHead;
  var dkSum = 0.0;
  var dvSum = 0.0;
  for (var g = 0u; g < G; g++) {
    dkSum += dkParts[first + g * perHead];
    dvSum += dvParts[first + g * perHead];
  }
  dk[i] = dkSum;
  dv[i] = dvSum;
}`,
    outputShapes: [keyShape(d), keyShape(d)],
    dispatch: workgroupGrid(Math.ceil((d.B * d.KV * d.S * d.D) / WORKGROUP)),
    uniforms: uniforms(d),
  };
}

tf.registerKernel({
  kernelName: KERNEL_NAME,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { q, k, v, mask } = inputs as Record<'q' | 'k' | 'v' | 'mask', tf.TensorInfo>;
    const [out] = runMultiOutputProgram(backend, forwardProgram(dimsOf(q, k, mask, attrs as unknown as Attrs), false), [q, k, v, mask]);
    return out;
  },
});

/** The forward with each query's statistics beside its result, for the backward kernel's `saved` input: webgpu only. */
tf.registerKernel({
  kernelName: SAVING_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { q, k, v, mask } = inputs as Record<'q' | 'k' | 'v' | 'mask', tf.TensorInfo>;
    return runMultiOutputProgram(backend, forwardProgram(dimsOf(q, k, mask, attrs as unknown as Attrs), true), [q, k, v, mask]);
  },
});

tf.registerKernel({
  kernelName: BACKWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { q, k, v, mask, dO, saved } = inputs as Record<'q' | 'k' | 'v' | 'mask' | 'dO', tf.TensorInfo> & { saved?: tf.TensorInfo };
    const d = dimsOf(q, k, mask, attrs as unknown as Attrs);
    const [dq, stats] = runMultiOutputProgram(backend, queryGradientProgram(d, saved !== undefined), [q, k, v, mask, dO, ...(saved ? [saved] : [])]);
    const [dkParts, dvParts] = runMultiOutputProgram(backend, keyGradientProgram(d), [q, k, v, mask, dO, stats]);
    disposeIntermediate(backend, stats);
    if (d.G === 1) return [dq, dkParts, dvParts];
    const [dk, dv] = runMultiOutputProgram(backend, headSumProgram(d), [dkParts, dvParts]);
    [dkParts, dvParts].forEach((t) => disposeIntermediate(backend, t));
    return [dq, dk, dv];
  },
});
