import * as tf from '@tensorflow/tfjs-core';
import { attentionKernelFor, runAttentionKernel } from './decode-attention';

/**
 * Attention over T new tokens per sequence (a prompt's prefill, or a training step's forward
 * pass without a gradient tape) as one WebAssembly SIMD kernel on tfjs-wasm, the one decoding
 * runs (source: libs/engine/kernels/attention.ts). In tfjs ops the same is, per KV head, two
 * 2-D matMuls, the mask, a softmax, and transposes of q and of the output between the
 * projections' token-major layout and heads-first; the kernel reads q and writes the output
 * token-major, and skips each token's causal future, half of a prompt's scores.
 */
const KERNEL_NAME = 'TrainyardPromptAttention';

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

/**
 * softmax(q k^T + mask) v with q token-major, [B * T, H * D] (each token's heads in order, the
 * G = H / KV heads of a KV head side by side, already scaled by 1/sqrt(D)), k and v [B, KV, S, D],
 * mask [B or 1, 1, T, S] additive -> [B * T, H * D], token-major. Null where the kernel does
 * not apply, for the caller to use tfjs ops: another backend, a gradient being recorded (the
 * kernel has none), not float32, D not a multiple of 4.
 */
export function promptAttention(q: tf.Tensor2D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D, T: number): tf.Tensor2D | null {
  const [B, KV, S, D] = k.shape;
  if (tf.getBackend() !== 'wasm' || tf.engine().isTapeOn() || D % 4 !== 0 || attentionKernelFor(tf.backend()) === null) return null;
  if ([q, k, v, mask].some((t) => t.dtype !== 'float32')) return null;
  const H = q.shape[1] / D;
  const masks = mask.shape[0];
  if (q.shape[0] !== B * T || !Number.isInteger(H / KV) || v.shape.some((n, i) => n !== k.shape[i]) || (masks !== 1 && masks !== B) || mask.shape[2] !== T || mask.shape[3] !== S) {
    throw new Error(`promptAttention: shapes q ${q.shape}, k ${k.shape}, v ${v.shape} and mask ${mask.shape} do not fit together`);
  }
  const attrs: Attrs = { T, kvHeads: KV, groupSize: H / KV };
  return tf.engine().runKernel(KERNEL_NAME, { q, k, v, mask }, attrs) as tf.Tensor2D;
}
