import * as tf from '@tensorflow/tfjs-core';
import type { AttentionKernels } from './attention-kernels';
import { attentionKernelFor, attentionThreads, runAttentionKernel } from './decode-attention';
import { withBackwardKernel } from './kernel-gradient';
import { SAVING_KERNEL, webGpuAttentionTakes } from './prompt-attention.webgpu';
import { fusedKernelsApply } from './webgpu-program';
import { heapOffset, heapView, WasmBackendInternals } from './wasm-heap';

/**
 * Attention over T new tokens per sequence (a prompt's prefill, or a training step's forward
 * pass) as one WebAssembly SIMD kernel on tfjs-wasm (source: libs/engine/assembly/attention.ts,
 * promptAttention: decoding's kernel in register tiles of 4 query rows, for head sizes that
 * are multiples of 8; others run decoding's own loops), and its gradient as a second kernel.
 * In tfjs ops the same is, per KV head, two 2-D matMuls, the mask, a softmax, and transposes
 * of q and of the output between the projections' token-major layout and heads-first (and
 * under a tape, their gradients); the kernels read q and dO and write the output and dq
 * token-major, and skip each token's causal future, half of a prompt's scores. On webgpu the
 * same kernel names run WGSL (prompt-attention.webgpu.ts), outside a tape, where k and v hold
 * exactly the mask's columns.
 */
const KERNEL_NAME = 'TrainyardPromptAttention';
const BACKWARD_KERNEL = 'TrainyardPromptAttentionBackward';

interface Attrs extends tf.NamedAttrMap {
  T: number;
  kvHeads: number;
  groupSize: number;
}

tf.registerKernel({
  kernelName: KERNEL_NAME,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { T, kvHeads, groupSize } = attrs as Attrs;
    return runAttentionKernel(backend, inputs as Record<'q' | 'k' | 'v' | 'mask', tf.TensorInfo>, T, kvHeads, groupSize);
  },
});

tf.registerKernel({
  kernelName: BACKWARD_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { T, kvHeads, groupSize } = attrs as Attrs;
    const { q, k, v, mask, dO } = inputs as Record<'q' | 'k' | 'v' | 'mask' | 'dO', tf.TensorInfo>;
    const wasm = backend as unknown as WasmBackendInternals;
    const [B, , S, D] = k.shape;
    const [dq, dk, dv] = [wasm.makeOutput(q.shape, 'float32'), wasm.makeOutput(k.shape, 'float32'), wasm.makeOutput(v.shape, 'float32')];
    const threads = attentionThreads(B, kvHeads, groupSize, T, S, D);
    if (threads) {
      const view = (t: tf.TensorInfo) => heapView(wasm, t);
      threads.runAttentionBackward({ q: view(q), k: view(k), v: view(v), mask: view(mask), dO: view(dO), dq: view(dq), dk: view(dk), dv: view(dv), B, KV: kvHeads, G: groupSize, T, S, D, maskRows: mask.shape[0] });
      return [dq, dk, dv];
    }
    const kernels = attentionKernelFor(backend) as AttentionKernels;
    // The kernel's scratch: a head's keys and values transposed, and a tile's P and dS.
    const scratch = wasm.makeOutput([kernels.attentionBackwardScratch(S, D)], 'float32');
    const at = (t: tf.TensorInfo) => heapOffset(wasm, t);
    try {
      kernels.attentionBackward(at(q), at(k), at(v), at(mask), at(dO), at(dq), at(dk), at(dv), at(scratch), B, kvHeads, groupSize, T, S, D, mask.shape[0], 0, B * kvHeads, 0);
    } finally {
      wasm.disposeData(scratch.dataId);
    }
    return [dq, dk, dv];
  },
});

/** The kernels' attributes for these shapes, or null where they do not apply (see promptAttention). */
function attrsFor(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, T: number): Attrs | null {
  const [B, KV, S, D] = k.shape;
  const onWebGpu = fusedKernelsApply() && webGpuAttentionTakes(D) && mask.shape[3] === S;
  if (!onWebGpu && (tf.getBackend() !== 'wasm' || D % 4 !== 0 || attentionKernelFor(tf.backend()) === null)) return null;
  if ([q, k, v, mask].some((t) => t.dtype !== 'float32')) return null;
  const H = q.shape[1] / D;
  const masks = mask.shape[0];
  // k and v may hold spare columns past the mask's (a KV cache's, model/kv-cache.ts), but not
  // under a gradient tape: the backward kernel reads all of them.
  const columns = mask.shape[3];
  const fits = columns === S || (columns < S && !tf.engine().isTapeOn());
  if (q.shape[0] !== B * T || !Number.isInteger(H / KV) || v.shape.some((n, i) => n !== k.shape[i]) || (masks !== 1 && masks !== B) || mask.shape[2] !== T || !fits) {
    throw new Error(`promptAttention: shapes q ${q.shape}, k ${k.shape}, v ${v.shape} and mask ${mask.shape} do not fit together`);
  }
  return { T, kvHeads: KV, groupSize: H / KV };
}

/**
 * softmax(q k^T + mask) v with q token-major, [B * T, H * D] (each token's heads in order, the
 * G = H / KV heads of a KV head side by side, already scaled by 1/sqrt(D)), k and v [B, KV, S, D]
 * (or more columns than S: only the first S count), mask [B or 1, 1, T, S] additive ->
 * [B * T, H * D], token-major. Null where the kernel does not apply, for the caller to use tfjs
 * ops: another backend, a gradient being recorded (the kernel has none), not float32, D not a
 * multiple of 4.
 */
export function promptAttention(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, T: number): tf.Tensor2D | null {
  if (tf.engine().isTapeOn()) return null;
  const attrs = attrsFor(q, k, v, mask, T);
  return attrs && (tf.engine().runKernel(KERNEL_NAME, { q, k, v, mask }, attrs) as tf.Tensor2D);
}

/**
 * promptAttention for a training pass: the same kernel, differentiable with respect to q, k and
 * v by the backward kernel, which recomputes the softmax weights from the saved q, k, v and
 * mask (memory of one token's [G, S] weights, whatever the length). `kept`, where given, is
 * this attention's output as an earlier pass computed it from the same q, k, v and mask (an
 * activation-checkpointed step's recompute): it stands for the forward kernel's. Null where
 * the kernels do not apply, for the caller to use tfjs ops.
 */
export function promptAttentionWithGradient(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, T: number, kept: tf.Tensor2D | null = null): tf.Tensor2D | null {
  const attrs = attrsFor(q, k, v, mask, T);
  if (!attrs) return null;
  // The mask is saved too: it is no input, but the backward pass reads it.
  return withBackwardKernel(
    [q, k, v],
    [q, k, v, mask],
    (qi, ki, vi) => (kept ? tf.clone(kept) : (tf.engine().runKernel(KERNEL_NAME, { q: qi, k: ki, v: vi, mask }, attrs) as tf.Tensor2D)),
    (dO, [qs, ks, vs, m]) => backward(qs as tf.Tensor2D, ks as tf.Tensor4D, vs as tf.Tensor4D, m as tf.Tensor4D, dO as tf.Tensor2D, attrs),
  );
}

/**
 * promptAttention for a pass that saves what its backward reads, on webgpu: the result and each
 * query's statistics [B * H * T, 3] (its log-sum-exp and visible columns), which
 * promptAttentionGradient takes as `saved` so that its dq program need not find them again.
 * Null elsewhere (the wasm backward finds them within one kernel), for the caller to use
 * promptAttention.
 */
export function promptAttentionSaving(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, T: number): { out: tf.Tensor2D; stats: tf.Tensor2D } | null {
  if (!fusedKernelsApply()) return null;
  const attrs = attrsFor(q, k, v, mask, T);
  if (!attrs) return null;
  const [out, stats] = tf.engine().runKernel(SAVING_KERNEL, { q, k, v, mask }, attrs) as tf.Tensor2D[];
  return { out, stats };
}

/** Whether promptAttentionSaving applies to heads of `headDim` now: what a saving pass's statistics cost is counted by (ops/decoder-block-gradient.ts). */
export function promptAttentionSaves(headDim: number): boolean {
  return fusedKernelsApply() && webGpuAttentionTakes(headDim);
}

/**
 * The gradient kernel alone: [dq, dk, dv] of promptAttention's output for its gradient dO
 * (laid out as q), or null where the kernels do not apply; `saved`, promptAttentionSaving's
 * statistics of the same forward. What promptAttentionWithGradient's backward pass runs; the
 * bench times it by itself.
 */
export function promptAttentionGradient(
  q: tf.Tensor2D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  mask: tf.Tensor4D,
  dO: tf.Tensor2D,
  T: number,
  saved: tf.Tensor2D | null = null,
): [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D] | null {
  const attrs = attrsFor(q, k, v, mask, T);
  return attrs && backward(q, k, v, mask, dO, attrs, saved);
}

function backward(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, dO: tf.Tensor2D, attrs: Attrs, saved: tf.Tensor2D | null = null): [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D] {
  return tf.engine().runKernel(BACKWARD_KERNEL, { q, k, v, mask, dO, ...(saved ? { saved } : {}) }, attrs) as unknown as [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D];
}
