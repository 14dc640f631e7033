import * as tf from '@tensorflow/tfjs-core';
import { forwardDeclarations, forwardTiles, forwardWalk, keyGradientTiles, laneDots, queryGradientTiles, sharedDots, sharingLanes, stageBlock } from './attention.wgsl';
import { disposeIntermediate, flatMain, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid, workgroupMemoryLimit } from './webgpu-program';

/**
 * Attention over T new tokens per sequence on webgpu, forward and backward, as WGSL: the same
 * kernel names as the wasm kernels (prompt-attention.ts), the same layouts. q is token-major
 * [B*T, H*D] (scaled), k and v [B, KV, S, D], the mask [B or 1, 1, T, S] additive; the G = H / KV
 * query heads of a KV head read its keys.
 *
 * Every program works in tiles, as FlashAttention does: a workgroup stages a block of rows in
 * workgroup memory once and each row it loads serves the whole block on the other side, where a
 * thread a row would read every key from global memory for itself. Each row of a workgroup's
 * own side has D / 8 threads (lanes, attention.wgsl.ts, laneTiles): a lane computes the dot
 * products of its own rows of the block as vec4s, independent of each other, and keeps two
 * vec4s of its row's output.
 *
 * The forward is one dispatch (attention.wgsl.ts, forwardWalk): a workgroup a tile of query
 * tokens of one head, taking the keys a block at a time: each lane's scores of its own keys of
 * the block, then softmax online over them (the running maximum m and sum l of exp(score - m)
 * of each query, the output's running sums rescaled whenever m grows); the scores never exist
 * as a tensor. The generic ops take six dispatches (two transposes, two batched matMuls, the
 * mask, a softmax).
 *
 * The backward is two dispatches, three with grouped queries, with P recomputed from q and k
 * rather than kept (ops/attention.ts, attendBackward, has the maths). The same query tiles
 * first find each query's log-sum-exp over the keys (or read it where the forward saved it:
 * SAVING_KERNEL), then in a second pass D = rowsum(P * dP) (= rowsum(dO * O)) and dq = sum_s P
 * (dP - D) k_s, and write the log-sum-exp, D and the query's visible columns beside dq. Then a
 * workgroup a tile of KT keys of one KV head and one of its G query heads walks that head's T
 * queries QT at a time, summing its part of dk = sum P (dP - D) q and dv = sum P dO; with G > 1
 * a last dispatch adds the G parts. The generic ops take about fifteen, with [heads, T, S]
 * tensors between them.
 *
 * A query's columns after its last visible one (the mask hides them: a prompt's causal future,
 * about half of a training step's pairs) weigh exactly 0, so a query tile stops after the last
 * column any of its queries sees, and a key tile skips the query tiles that see none of its
 * keys. A query the mask hides whole reads every column, as softmax over equal scores does.
 */
const KERNEL_NAME = 'TrainyardPromptAttention';
/** The forward that also writes each query's statistics; webgpu only (prompt-attention.ts, promptAttentionSaving). */
export const SAVING_KERNEL = 'TrainyardPromptAttentionSaving';
const BACKWARD_KERNEL = 'TrainyardPromptAttentionBackward';
/** Threads a workgroup of the head-sum program. */
const WORKGROUP = 64;
/** Mask values below this hide a column (KVCache's MASKED is -1e9), as the wasm kernels read them. */
const HIDDEN = '-1e8';

/** Whether the programs take heads of `headDim`: a multiple of 8 up to 256, for which each program's tiles fit (attention.wgsl.ts). */
export function webGpuAttentionTakes(headDim: number): boolean {
  return forwardTiles(headDim) !== null && queryGradientTiles(headDim) !== null && keyGradientTiles(headDim) !== null;
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

/** The bindings (0 the uniforms, inputs, outputs), the sizes, the helpers every program here shares, and a vec4 reader for each of `vectors`. */
function header(d: Dims, inputs: string[], outputs: string[], vectors: string[]): string {
  const { KV, G, D } = d;
  return `${multiOutputBindings('B : u32, T : u32, S : u32, maskRows : u32', inputs, outputs)}
const KV : u32 = ${KV}u;
const G : u32 = ${G}u;
const D : u32 = ${D}u;
const HD : u32 = ${KV * G * D}u;
// Where query (b, head, t) starts in q, dO and dq (token-major), key (b, kvh, s) in k and v.
fn queryAt(b : u32, head : u32, t : u32) -> u32 { return (b * u.T + t) * HD + head * D; }
fn keyAt(b : u32, kvh : u32, s : u32) -> u32 { return ((b * KV + kvh) * u.S + s) * D; }
fn maskAt(b : u32, t : u32, s : u32) -> f32 { return mask[(select(b, 0u, u.maskRows == 1u) * u.T + t) * u.S + s]; }
// The vec4 of a tensor whose first float is at \`at\`.
${vectors.map((t) => `fn ${t}Vec(at : u32) -> vec4<f32> { return vec4<f32>(${t}[at], ${t}[at + 1u], ${t}[at + 2u], ${t}[at + 3u]); }`).join('\n')}`;
}

/** The entry point's opening: the workgroup's index w among all, returning past the last of `count`. */
const OPENING = (count: string, workgroup: number) => `@compute @workgroup_size(${workgroup})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let w = wg.y * groups.x + wg.x;
  if (w >= ${count}) { return; }`;

/** Stages `rows` rows of `source` (q or dO) from the tile's token t0 on in `target` as vec4s, rows of RS (rows past the tile's last query repeat it). */
const stageQueryRows = (source: string, target: string, rows: string) => `for (var e = tid; e < ${rows} * D4; e += WG) {
    ${target}[(e / D4) * RS + e % D4] = ${source}Vec(queryAt(b, head, t0 + min(e / D4, queries - 1u)) + 4u * (e % D4));
  }`;

/**
 * A query tile's set-up (forward and dq): which tile w is (TQ tokens t0.. of one head, the
 * `queries` of them before T), q's rows (and dO's, with `withGradient`) staged, each query's
 * visible columns in vis (up to its last column the mask does not hide; all S where it hides
 * every one) as `visibility` finds them, and `columns`, the most any of them sees: the keys the
 * tile reads, the same for the whole workgroup; then this thread's query i of the tile, its
 * lane, and t, the query's token (the tile's last real one past T).
 */
const queryTile = (visibility: string, workgroup: number, withGradient = false) => `${OPENING('u.B * KV * G * ((u.T + TQ - 1u) / TQ)', workgroup)}
  let tiles = (u.T + TQ - 1u) / TQ;
  let t0 = (w % tiles) * TQ;
  let head = (w / tiles) % (KV * G);
  let b = w / (tiles * KV * G);
  let kvh = head / G;
  let queries = min(TQ, u.T - t0);
  // Query t0 + i's row of the statistics [B * KV * G * T, 3].
  let firstRow = (b * KV * G + head) * u.T + t0;
  ${stageQueryRows('q', 'qs', 'TQ')}
  ${withGradient ? stageQueryRows('dO', 'dOs', 'TQ') : ''}
  ${visibility}
  if (tid == 0u) {
    var most = 0u;
    for (var i = 0u; i < TQ; i++) { most = max(most, vis[i]); }
    tileColumns = most;
  }
  let columns = workgroupUniformLoad(&tileColumns);
  let i = tid / L;
  let lane = tid % L;
  let t = t0 + min(i, queries - 1u);`;

/**
 * Each query's visible columns from the tile's mask rows, read by all the threads together, a
 * column each, where a thread a query walking back from the last column would wait on one read
 * after another, S of them for a causal prompt's first query.
 */
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

/** The workgroup memory VISIBLE_FROM_MASK and queryTile use beside forwardDeclarations'. */
const VISIBILITY_MEMORY = `var<workgroup> vis : array<u32, TQ>;
// Each query's last visible column + 1 (0 while none is seen).
var<workgroup> lastVisible : array<atomic<u32>, TQ>;
var<workgroup> tileColumns : u32;`;

/** Where the walks read k, v and the mask, in the programs' layouts (ForwardInputs). */
const INPUTS = {
  key: (column: string, d4: string) => `kVec(keyAt(b, kvh, ${column}) + 4u * (${d4}))`,
  value: (column: string, d4: string) => `vVec(keyAt(b, kvh, ${column}) + 4u * (${d4}))`,
  mask: (column: string) => `maskAt(b, t, ${column})`,
};

/** Writes this lane's two vec4s of query i's row of a token-major output from `v0` and `v1`. */
const writeLaneVecs = (target: string, v0: string, v1: string) => `let at = queryAt(b, head, t0 + i);
    let o0 = ${v0};
    let o1 = ${v1};
    for (var c = 0u; c < 4u; c++) {
      ${target}[at + 4u * lane + c] = o0[c];
      ${target}[at + 4u * (lane + L) + c] = o1[c];
    }`;

/**
 * The forward (forwardWalk, over the columns the tile's queries see); `saving` (a training pass
 * that saves what its backward reads), also each query's statistics [log-sum-exp, 0, visible
 * columns], so that the backward need not find the log-sum-exp again.
 */
function forwardProgram(d: Dims, saving: boolean, memory: number): MultiOutputProgram {
  const tiles = forwardTiles(d.D, memory);
  if (tiles === null) throw new Error(`prompt attention takes no head dimension ${d.D}`);
  return {
    key: `trainyardPromptAttention${saving ? 'Saving' : ''}_${d.KV}_${d.G}_${d.D}_${tiles.TK}`,
    wgsl: () => `${header(d, ['q', 'k', 'v', 'mask'], saving ? ['out', 'stats'] : ['out'], ['q', 'k', 'v'])}
${forwardDeclarations(d.D, tiles)}
${VISIBILITY_MEMORY}
${queryTile(VISIBLE_FROM_MASK, tiles.workgroup)}
  ${forwardWalk(tiles, INPUTS)}
  if (i < queries) {
    ${writeLaneVecs('out', 'acc0 / total', 'acc1 / total')}
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
 * pass over the keys (forwardWalk's statistics) is not needed. The tiles are the forward's
 * (queryGradientTiles), dO staged beside q. Per block of keys: the values staged and each
 * lane's dP = dO . v of its keys; the keys staged, its scores and P = exp(score - lse); P and
 * P dP into workgroup memory, and the lane's part of D = rowsum(P dP); then each lane's vec4s of
 * sum_s P dP k_s and sum_s P k_s over the block. dq = sum P dP k - D sum P k, once the lanes'
 * parts of D are added.
 */
function queryGradientProgram(d: Dims, saved: boolean, memory: number): MultiOutputProgram {
  const tiles = queryGradientTiles(d.D, memory);
  if (tiles === null) throw new Error(`prompt attention's backward takes no head dimension ${d.D}`);
  const KEYS_A_LANE = Math.ceil(tiles.TK / tiles.lanes);
  const fromSaved = `if (tid < TQ) {
    let row = firstRow + min(tid, queries - 1u);
    vis[tid] = u32(saved[3u * row + 2u]);
    lse[tid] = saved[3u * row];
  }
  workgroupBarrier();`;
  return {
    key: `trainyardPromptAttentionDq${saved ? 'Saved' : ''}_${d.KV}_${d.G}_${d.D}_${tiles.TK}`,
    wgsl: () => `${header(d, ['q', 'k', 'v', 'mask', 'dO', ...(saved ? ['saved'] : [])], ['dq', 'stats'], ['q', 'k', 'v', 'dO'])}
${forwardDeclarations(d.D, tiles)}
${VISIBILITY_MEMORY}
var<workgroup> dOs : array<vec4<f32>, ${tiles.TQ * (d.D / 4 + 1)}>;
// P dP of each query and key of the block, beside P in ps.
var<workgroup> dps : array<f32, ${tiles.TQ * tiles.TK}>;
var<workgroup> lse : array<f32, TQ>;
${queryTile(saved ? fromSaved : VISIBLE_FROM_MASK, tiles.workgroup, true)}
${
  saved
    ? '  let logSumExp = lse[i];'
    : `  ${forwardWalk(tiles, INPUTS, true)}
  let logSumExp = runningMax + log(total);`
}
  // dq = sum_s P (dP - D) k_s = sum_s P dP k_s - D sum_s P k_s, D = sum_s P dP: both sums in one pass.
  var pk0 = vec4<f32>(0.0);
  var pk1 = vec4<f32>(0.0);
  var pdpk0 = vec4<f32>(0.0);
  var pdpk1 = vec4<f32>(0.0);
  var rowDPart = 0.0;
  for (var start = 0u; start < columns; start += TK) {
    let tile = min(TK, columns - start);
    ${stageBlock(INPUTS.value)}
    workgroupBarrier();
    ${laneDots('dOs', 'dp', tiles)}
    ${
      // Every thread has read the values, and the keys take their place: where lanes share the rows, laneDots ended on the barrier that says so.
      sharingLanes(tiles.lanes, tiles.TK) > 1 ? '' : 'workgroupBarrier();'
    }
    ${stageBlock(INPUTS.key)}
    workgroupBarrier();
    ${laneDots('qs', 'scores', tiles)}
    for (var j = 0u; j < ${KEYS_A_LANE}u; j++) {
      let c = lane + j * L;
      let p = select(0.0, exp(scores[j] + maskAt(b, t, start + min(c, tile - 1u)) - logSumExp), c < tile);
      rowDPart += p * dp[j];
      if (c < TK) {
        ps[i * TK + c] = p;
        dps[i * TK + c] = p * dp[j];
      }
    }
    workgroupBarrier();
    for (var c = 0u; c < TK; c++) {
      let p = ps[i * TK + c];
      let pdp = dps[i * TK + c];
      let k0 = kv[c * RS + lane];
      let k1 = kv[c * RS + lane + L];
      pk0 += p * k0;
      pk1 += p * k1;
      pdpk0 += pdp * k0;
      pdpk1 += pdp * k1;
    }
    workgroupBarrier();
  }
  part[tid] = rowDPart;
  workgroupBarrier();
  var rowD = 0.0;
  for (var l = 0u; l < L; l++) { rowD += part[i * L + l]; }
  if (i < queries) {
    ${writeLaneVecs('dq', 'pdpk0 - rowD * pk0', 'pdpk1 - rowD * pk1')}
    if (lane == 0u) {
      stats[3u * (firstRow + i)] = logSumExp;
      stats[3u * (firstRow + i) + 1u] = rowD;
      stats[3u * (firstRow + i) + 2u] = f32(vis[i]);
    }
  }
}`,
    outputShapes: [[d.B * d.T, d.KV * d.G * d.D], statsShape(d)],
    dispatch: workgroupGrid(d.B * d.KV * d.G * Math.ceil(d.T / tiles.TQ)),
    uniforms: uniforms(d),
  };
}

/**
 * The dk/dv program's scores and dP = dO . v of this thread's key `c` against the block's
 * queries lane, lane + L, ... (clamped to the block), `queriesALane` of them, each whole.
 */
const wholeQueryDots = (queriesALane: number) => `for (var j = 0u; j < ${queriesALane}u; j++) {
      scores[j] = 0.0;
      dp[j] = 0.0;
    }
    for (var d = 0u; d < D4; d++) {
      let kd = ks[c * RS + d];
      let vd = vs[c * RS + d];
      for (var j = 0u; j < ${queriesALane}u; j++) {
        let r = min(lane + j * L, QT - 1u) * RS + d;
        scores[j] += dot(kd, qs[r]);
        dp[j] += dot(vd, dOs[r]);
      }
    }`;

/**
 * The same where `share` lanes share each query of the block (sharingLanes): each lane's slice
 * of one query's score and dP into `parts`, then lane l's of query l (clamped), its lanes'
 * parts added.
 */
const sharedQueryDots = (share: number) => `var slicePart = vec2<f32>(0.0);
    ${sharedDots(share, 'QT', (at, r) => `slicePart += vec2<f32>(dot(ks[c * RS + ${at}], qs[${r} * RS + ${at}]), dot(vs[c * RS + ${at}], dOs[${r} * RS + ${at}]));`)}
    parts[tid] = slicePart;
    workgroupBarrier();
    var sums = vec2<f32>(0.0);
    for (var p = 0u; p < ${share}u; p++) { sums += parts[c * L + p * QT + min(lane, QT - 1u)]; }
    scores[0] = sums.x;
    dp[0] = sums.y;`;

/**
 * dk and dv, a workgroup a tile of KT keys (b, kvh, s0..) and one query head g of the KV head's
 * G, summed over that head's T queries QT at a time: [B, KV, G, S, D] each, which
 * headSumProgram adds over G (with G = 1 they are dk and dv). A workgroup for all G heads
 * would leave the GPU with B * KV * S / KT workgroups, a few hundred at training's lengths.
 * Each key has D / 8 lanes (keyGradientTiles); per block of queries, a lane computes the scores
 * and dP = dO . v of its own queries of the block against its key (vec4 dot products; where the
 * block has fewer queries than the key has lanes, its slice of one query's, the lanes' parts
 * added through workgroup memory: sharingLanes), P and dS = P (dP - D) into workgroup memory,
 * then its vec4s of sum dS q and sum P dO over the block.
 */
function keyGradientProgram(d: Dims, memory: number): MultiOutputProgram {
  const tiles = keyGradientTiles(d.D, memory);
  if (tiles === null) throw new Error(`prompt attention's backward takes no head dimension ${d.D}`);
  const { rows: KT, block: QT, lanes, workgroup } = tiles;
  const QUERIES_A_LANE = Math.ceil(QT / lanes);
  const share = sharingLanes(lanes, QT);
  const RS = d.D / 4 + 1;
  return {
    key: `trainyardPromptAttentionDkv_${d.KV}_${d.G}_${d.D}_${KT}_${QT}`,
    wgsl: () => `${header(d, ['q', 'k', 'v', 'mask', 'dO', 'stats'], ['dk', 'dv'], ['q', 'k', 'v', 'dO'])}
// vec4s of a head's row, and a staged row's stride in vec4s.
const D4 : u32 = ${d.D / 4}u;
const RS : u32 = ${RS}u;
const KT : u32 = ${KT}u;
const QT : u32 = ${QT}u;
const L : u32 = ${lanes}u;
const WG : u32 = ${workgroup}u;
var<workgroup> ks : array<vec4<f32>, ${KT * RS}>;
var<workgroup> vs : array<vec4<f32>, ${KT * RS}>;
var<workgroup> qs : array<vec4<f32>, ${QT * RS}>;
var<workgroup> dOs : array<vec4<f32>, ${QT * RS}>;
// A key's P and dS = P (dP - D) for each query of the block, key-major.
var<workgroup> ps : array<f32, ${KT * QT}>;
var<workgroup> dss : array<f32, ${KT * QT}>;
var<workgroup> lse : array<f32, QT>;
var<workgroup> rowD : array<f32, QT>;
var<workgroup> vis : array<f32, QT>;
var<workgroup> seen : u32;${share > 1 ? '\n// Each lane\'s part of its shared query\'s score and dP.\nvar<workgroup> parts : array<vec2<f32>, WG>;' : ''}
${OPENING('u.B * KV * G * ((u.S + KT - 1u) / KT)', workgroup)}
  let tiles = (u.S + KT - 1u) / KT;
  let s0 = (w % tiles) * KT;
  let head = (w / tiles) % (KV * G);
  let kvh = head / G;
  let b = w / (tiles * KV * G);
  let keys = min(KT, u.S - s0);
  for (var e = tid; e < KT * D4; e += WG) {
    let at = keyAt(b, kvh, s0 + min(e / D4, keys - 1u)) + 4u * (e % D4);
    ks[(e / D4) * RS + e % D4] = kVec(at);
    vs[(e / D4) * RS + e % D4] = vVec(at);
  }
  // This thread's key of the tile (the tile's last real one past S) and its lane.
  let c = tid / L;
  let lane = tid % L;
  let s = s0 + min(c, keys - 1u);
  var dk0 = vec4<f32>(0.0);
  var dk1 = vec4<f32>(0.0);
  var dv0 = vec4<f32>(0.0);
  var dv1 = vec4<f32>(0.0);
  let firstRow = (b * KV * G + head) * u.T;
  for (var t0 = 0u; t0 < u.T; t0 += QT) {
    let queries = min(QT, u.T - t0);
    // Skip the block when none of its queries sees the first key (a causal mask's earlier queries).
    if (tid == 0u) {
      var sees = 0u;
      for (var i = 0u; i < queries; i++) { sees = max(sees, select(0u, 1u, f32(s0) < stats[3u * (firstRow + t0 + i) + 2u])); }
      seen = sees;
    }
    if (workgroupUniformLoad(&seen) == 0u) { continue; }
    ${stageQueryRows('q', 'qs', 'QT')}
    ${stageQueryRows('dO', 'dOs', 'QT')}
    if (tid < QT) {
      let row = firstRow + t0 + min(tid, queries - 1u);
      lse[tid] = stats[3u * row];
      rowD[tid] = stats[3u * row + 1u];
      // A query past T sees nothing.
      vis[tid] = select(stats[3u * row + 2u], 0.0, tid >= queries);
    }
    workgroupBarrier();
    var scores : array<f32, ${QUERIES_A_LANE}>;
    var dp : array<f32, ${QUERIES_A_LANE}>;
    ${share > 1 ? sharedQueryDots(share) : wholeQueryDots(QUERIES_A_LANE)}
    for (var j = 0u; j < ${QUERIES_A_LANE}u; j++) {
      let i = lane + j * L;
      if (i < QT) {
        var p = 0.0;
        var ds = 0.0;
        if (f32(s) < vis[i]) {
          p = exp(scores[j] + maskAt(b, t0 + min(i, queries - 1u), s) - lse[i]);
          ds = p * (dp[j] - rowD[i]);
        }
        ps[c * QT + i] = p;
        dss[c * QT + i] = ds;
      }
    }
    workgroupBarrier();
    for (var i = 0u; i < QT; i++) {
      let p = ps[c * QT + i];
      let ds = dss[c * QT + i];
      dk0 += ds * qs[i * RS + lane];
      dk1 += ds * qs[i * RS + lane + L];
      dv0 += p * dOs[i * RS + lane];
      dv1 += p * dOs[i * RS + lane + L];
    }
    workgroupBarrier();
  }
  if (c < keys) {
    // Head g's part, [B, KV, G, S, D].
    let at = (((b * KV + kvh) * G + head % G) * u.S + s0 + c) * D;
    for (var e = 0u; e < 4u; e++) {
      dk[at + 4u * lane + e] = dk0[e];
      dk[at + 4u * (lane + L) + e] = dk1[e];
      dv[at + 4u * lane + e] = dv0[e];
      dv[at + 4u * (lane + L) + e] = dv1[e];
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
    const [out] = runMultiOutputProgram(backend, forwardProgram(dimsOf(q, k, mask, attrs as unknown as Attrs), false, workgroupMemoryLimit(backend)), [q, k, v, mask]);
    return out;
  },
});

/** The forward with each query's statistics beside its result, for the backward kernel's `saved` input: webgpu only. */
tf.registerKernel({
  kernelName: SAVING_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { q, k, v, mask } = inputs as Record<'q' | 'k' | 'v' | 'mask', tf.TensorInfo>;
    return runMultiOutputProgram(backend, forwardProgram(dimsOf(q, k, mask, attrs as unknown as Attrs), true, workgroupMemoryLimit(backend)), [q, k, v, mask]);
  },
});

tf.registerKernel({
  kernelName: BACKWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { q, k, v, mask, dO, saved } = inputs as Record<'q' | 'k' | 'v' | 'mask' | 'dO', tf.TensorInfo> & { saved?: tf.TensorInfo };
    const d = dimsOf(q, k, mask, attrs as unknown as Attrs);
    const memory = workgroupMemoryLimit(backend);
    const [dq, stats] = runMultiOutputProgram(backend, queryGradientProgram(d, saved !== undefined, memory), [q, k, v, mask, dO, ...(saved ? [saved] : [])]);
    const [dkParts, dvParts] = runMultiOutputProgram(backend, keyGradientProgram(d, memory), [q, k, v, mask, dO, stats]);
    disposeIntermediate(backend, stats);
    if (d.G === 1) return [dq, dkParts, dvParts];
    const [dk, dv] = runMultiOutputProgram(backend, headSumProgram(d), [dkParts, dvParts]);
    [dkParts, dvParts].forEach((t) => disposeIntermediate(backend, t));
    return [dq, dk, dv];
  },
});
