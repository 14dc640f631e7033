import * as tf from '@tensorflow/tfjs-core';
import { disposeIntermediate, flatMain, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid } from './webgpu-program';

/**
 * Attention over T new tokens per sequence on webgpu, forward and backward, as WGSL: the same
 * kernel names as the wasm kernels (prompt-attention.ts), the same layouts. q is token-major
 * [B*T, H*D] (scaled), k and v [B, KV, S, D], the mask [B or 1, 1, T, S] additive; the G = H / KV
 * query heads of a KV head read its keys.
 *
 * The forward is one dispatch, a thread a query row (b, head, t) running softmax online over the
 * keys, as FlashAttention does: the running maximum m, the running sum l of exp(score - m) and
 * the output's running sum, rescaled whenever m grows; the scores never exist as a tensor. The
 * generic ops take six dispatches (two transposes, two batched matMuls, the mask, a softmax).
 *
 * The backward is two, with P recomputed from q and k rather than kept (ops/attention.ts,
 * attendBackward, has the maths): a thread a query row computes its log-sum-exp, D = rowsum(P *
 * dP) (= rowsum(dO * O)) and dq = sum_s P (dP - D) k_s in two passes over the keys, and writes
 * the log-sum-exp, D and its visible columns beside dq; then a thread a key row (b, KV head, s)
 * sums over the G*T query rows that read it dk = sum P (dP - D) q and dv = sum P dO. The
 * generic ops take about fifteen, with [heads, T, S] tensors between them.
 *
 * A query row's columns after its last visible one (the mask hides them: a prompt's causal
 * future, about half of a training step's pairs) weigh exactly 0, so every program stops
 * before them, as the wasm kernels do; the results are the same bits. A row the mask hides
 * whole reads every column, as softmax over equal scores does.
 */
const KERNEL_NAME = 'TrainyardPromptAttention';
const BACKWARD_KERNEL = 'TrainyardPromptAttentionBackward';
const WORKGROUP = 64;
/** Mask values below this hide a column (KVCache's MASKED is -1e9), as the wasm kernels read them. */
const HIDDEN = '-1e8';

/** Largest head dimension the programs take: each thread keeps one or two rows of D floats in registers. */
export const MAX_WEBGPU_ATTENTION_HEAD_DIM = 256;

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

function uniforms(d: Dims): MultiOutputProgram['uniforms'] {
  return [d.B, d.T, d.S, d.maskRows].map((value) => ({ type: 'uint32' as const, value }));
}

/** The bindings (0 the uniforms, inputs, outputs) and the helpers every program here shares. */
function header(d: Dims, inputs: string[], outputs: string[]): string {
  const { KV, G, D } = d;
  return `${multiOutputBindings('B : u32, T : u32, S : u32, maskRows : u32', inputs, outputs)}
const KV : u32 = ${KV}u;
const G : u32 = ${G}u;
const D : u32 = ${D}u;
const HD : u32 = ${KV * G * D}u;
// Where query row (b, head, t) starts in q, dO and dq (token-major), key row (b, kvh, s) in k and v.
fn queryAt(b : u32, head : u32, t : u32) -> u32 { return (b * u.T + t) * HD + head * D; }
fn keyAt(b : u32, kvh : u32, s : u32) -> u32 { return ((b * KV + kvh) * u.S + s) * D; }
fn maskAt(b : u32, t : u32, s : u32) -> f32 { return mask[(select(b, 0u, u.maskRows == 1u) * u.T + t) * u.S + s]; }
fn score(qi : u32, kj : u32) -> f32 {
  var sum = 0.0;
  for (var d = 0u; d < D; d++) { sum += q[qi + d] * k[kj + d]; }
  return sum;
}
// The columns query row (b, t) reads: up to its last one the mask does not hide (all S where it hides every one).
fn visibleColumns(b : u32, t : u32) -> u32 {
  var n = u.S;
  while (n > 0u && maskAt(b, t, n - 1u) < ${HIDDEN}) { n--; }
  return select(u.S, n, n > 0u);
}
${flatMain(WORKGROUP)}`;
}

/** A query row's thread: i over B * KV * G * T, token t fastest (its neighbours read the same keys). */
const QUERY_ROW = `  if (i >= u.B * KV * G * u.T) { return; }
  let t = i % u.T;
  let head = (i / u.T) % (KV * G);
  let b = i / (u.T * KV * G);
  let kvh = head / G;
  let qi = queryAt(b, head, t);
  let visible = visibleColumns(b, t);`;

function forwardProgram(d: Dims): MultiOutputProgram {
  return {
    key: `trainyardPromptAttention_${d.KV}_${d.G}_${d.D}`,
    wgsl: () => `${header(d, ['q', 'k', 'v', 'mask'], ['out'])}
${QUERY_ROW}
  var acc : array<f32, ${d.D}>;
  var m = -3.0e38;
  var l = 0.0;
  for (var s = 0u; s < visible; s++) {
    let kj = keyAt(b, kvh, s);
    let x = score(qi, kj) + maskAt(b, t, s);
    let mNew = max(m, x);
    let rescale = exp(m - mNew);
    let p = exp(x - mNew);
    l = l * rescale + p;
    for (var e = 0u; e < D; e++) { acc[e] = acc[e] * rescale + p * v[kj + e]; }
    m = mNew;
  }
  for (var e = 0u; e < D; e++) { out[qi + e] = acc[e] / l; }
}`,
    outputShapes: [[d.B * d.T, d.KV * d.G * d.D]],
    dispatch: workgroupGrid(Math.ceil((d.B * d.KV * d.G * d.T) / WORKGROUP)),
    uniforms: uniforms(d),
  };
}

/** dq, and each query row's [log-sum-exp, D, visible columns] for the key rows' program. */
function queryGradientProgram(d: Dims): MultiOutputProgram {
  return {
    key: `trainyardPromptAttentionDq_${d.KV}_${d.G}_${d.D}`,
    wgsl: () => `${header(d, ['q', 'k', 'v', 'mask', 'dO'], ['dq', 'stats'])}
${QUERY_ROW}
  var m = -3.0e38;
  var l = 0.0;
  for (var s = 0u; s < visible; s++) {
    let x = score(qi, keyAt(b, kvh, s)) + maskAt(b, t, s);
    let mNew = max(m, x);
    l = l * exp(m - mNew) + exp(x - mNew);
    m = mNew;
  }
  let lse = m + log(l);
  // dq = sum_s P (dP - D) k_s = sum_s P dP k_s - D sum_s P k_s, D = sum_s P dP: both sums in one pass.
  var pdpk : array<f32, ${d.D}>;
  var pk : array<f32, ${d.D}>;
  var rowD = 0.0;
  for (var s = 0u; s < visible; s++) {
    let kj = keyAt(b, kvh, s);
    let p = exp(score(qi, kj) + maskAt(b, t, s) - lse);
    var dp = 0.0;
    for (var e = 0u; e < D; e++) { dp += dO[qi + e] * v[kj + e]; }
    rowD += p * dp;
    for (var e = 0u; e < D; e++) {
      pdpk[e] += p * dp * k[kj + e];
      pk[e] += p * k[kj + e];
    }
  }
  for (var e = 0u; e < D; e++) { dq[qi + e] = pdpk[e] - rowD * pk[e]; }
  stats[3u * i] = lse;
  stats[3u * i + 1u] = rowD;
  stats[3u * i + 2u] = f32(visible);
}`,
    outputShapes: [
      [d.B * d.T, d.KV * d.G * d.D],
      [d.B * d.KV * d.G * d.T, 3],
    ],
    dispatch: workgroupGrid(Math.ceil((d.B * d.KV * d.G * d.T) / WORKGROUP)),
    uniforms: uniforms(d),
  };
}

/** dk and dv, a thread a key row (b, kvh, s), summed over the G * T query rows of its KV head. */
function keyGradientProgram(d: Dims): MultiOutputProgram {
  return {
    key: `trainyardPromptAttentionDkv_${d.KV}_${d.G}_${d.D}`,
    wgsl: () => `${header(d, ['q', 'k', 'v', 'mask', 'dO', 'stats'], ['dk', 'dv'])}
  if (i >= u.B * KV * u.S) { return; }
  let s = i % u.S;
  let kvh = (i / u.S) % KV;
  let b = i / (u.S * KV);
  let kj = keyAt(b, kvh, s);
  var dkAcc : array<f32, ${d.D}>;
  var dvAcc : array<f32, ${d.D}>;
  for (var g = 0u; g < G; g++) {
    let head = kvh * G + g;
    for (var t = 0u; t < u.T; t++) {
      let qi = queryAt(b, head, t);
      let row = ((b * KV + kvh) * G + g) * u.T + t;
      // Past the row's visible columns P is 0: nothing to add.
      if (f32(s) >= stats[3u * row + 2u]) { continue; }
      let p = exp(score(qi, kj) + maskAt(b, t, s) - stats[3u * row]);
      var dp = 0.0;
      for (var e = 0u; e < D; e++) { dp += dO[qi + e] * v[kj + e]; }
      let ds = p * (dp - stats[3u * row + 1u]);
      for (var e = 0u; e < D; e++) {
        dkAcc[e] += ds * q[qi + e];
        dvAcc[e] += p * dO[qi + e];
      }
    }
  }
  for (var e = 0u; e < D; e++) {
    dk[kj + e] = dkAcc[e];
    dv[kj + e] = dvAcc[e];
  }
}`,
    outputShapes: [
      [d.B, d.KV, d.S, d.D],
      [d.B, d.KV, d.S, d.D],
    ],
    dispatch: workgroupGrid(Math.ceil((d.B * d.KV * d.S) / WORKGROUP)),
    uniforms: uniforms(d),
  };
}

tf.registerKernel({
  kernelName: KERNEL_NAME,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { q, k, v, mask } = inputs as Record<'q' | 'k' | 'v' | 'mask', tf.TensorInfo>;
    const [out] = runMultiOutputProgram(backend, forwardProgram(dimsOf(q, k, mask, attrs as unknown as Attrs)), [q, k, v, mask]);
    return out;
  },
});

tf.registerKernel({
  kernelName: BACKWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { q, k, v, mask, dO } = inputs as Record<'q' | 'k' | 'v' | 'mask' | 'dO', tf.TensorInfo>;
    const d = dimsOf(q, k, mask, attrs as unknown as Attrs);
    const [dq, stats] = runMultiOutputProgram(backend, queryGradientProgram(d), [q, k, v, mask, dO]);
    const [dk, dv] = runMultiOutputProgram(backend, keyGradientProgram(d), [q, k, v, mask, dO, stats]);
    disposeIntermediate(backend, stats);
    return [dq, dk, dv];
  },
});
