import * as tf from '@tensorflow/tfjs-core';
import { rope as ropeKernel, ropeGradient, ropeQkv as ropeQkvKernel, ropeQkvGradient, ropeQkvNormed as ropeQkvNormedKernel, ropeQkvNormedGradient, ropeWithGradient } from '../kernels/rope';
import type { HeadNorms } from '../model/llama';
import { savedActivations } from './saved-activations';

/**
 * Rotary position embeddings, x * cos + rotate_half(x) * sin for x, cos and sin [N, heads, D]:
 * one kernel instead of six on wasm (the same bits), with its backward kernel under a gradient
 * tape; one WGSL dispatch instead of four on webgpu (kernels/rope.ts); elsewhere tfjs ops, with
 * rotate_half as a matMul by `rotation`, a fixed signed permutation [D, D] (model/rope.ts).
 */
export function rope(x: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D, rotation: tf.Tensor2D): tf.Tensor3D {
  const kernel = tf.engine().isTapeOn() ? ropeWithGradient(x, cos, sin) : ropeKernel(x, cos, sin);
  if (kernel) return kernel;
  const [n, heads, d] = x.shape;
  const rotated = tf.reshape(tf.matMul(tf.reshape(x, [n * heads, d]), rotation), [n, heads, d]);
  return tf.add(tf.mul(x, cos), tf.mul(rotated, sin));
}

/**
 * d loss / d x of rope from its output's gradient dy. rope is linear in x: y = x cos + (x R) sin
 * with R the rotation, so dx = dy cos + (dy sin) R^T, and R^T = -R (rotate_half's transpose is
 * its inverse, a rotation by -90 degrees in each pair of halves). RoPE's tables hold the same
 * angle in both halves of a head (sin[j] = sin[j + D/2]), so (dy sin) R = (dy R) sin and
 *
 *   dx = dy cos - (dy R) sin = rope(dy, cos, -sin)
 *
 * which is rope's own kernel with the sines negated (`negatedSin`, the caller's: one table per
 * step) on webgpu and with ops; on wasm the backward kernel, from cos and sin.
 */
export function ropeBackward(dy: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D, negatedSin: tf.Tensor3D, rotation: tf.Tensor2D): tf.Tensor3D {
  return ropeGradient(dy, cos, sin) ?? rope(dy, cos, negatedSin, rotation);
}

/**
 * The q|k|v projection's output [N, (H + 2 KV) D] as attention takes it, where q and k go
 * straight into rope (no q_norm or k_norm): q rotated, token-major [N, H*D], k rotated and v,
 * heads-first [B, KV, T, D] (T tokens a row). One WGSL dispatch on webgpu (kernels/rope.ts);
 * null elsewhere, for the caller to write it out with ops. ropeQkvBackward is its gradient.
 */
export function ropeQkv(qkv: tf.Tensor2D, cos: tf.Tensor3D, sin: tf.Tensor3D, kvHeads: number, T: number): [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D] | null {
  return ropeQkvKernel(qkv, cos, sin, kvHeads, T);
}

/**
 * The gradient of the q|k|v projection's output [N, (H + 2 KV) D] where q and k went straight
 * into rope (no q_norm or k_norm) and attention took k and v heads-first: from attention's dq
 * (token-major), dk and dv ([B, KV, T, D]), ropeBackward on the q and k heads and dv moved back
 * token-major, side by side. One WGSL dispatch on webgpu (kernels/rope.ts); null elsewhere, for
 * the caller to write it out with ops.
 */
export function ropeQkvBackward(dq: tf.Tensor2D, dk: tf.Tensor4D, dv: tf.Tensor4D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor2D | null {
  return ropeQkvGradient(dq, dk, dv, cos, sin);
}

/**
 * ropeQkv for the families with q_norm and k_norm (Qwen3, Gemma 3): each q and k head RMSNorm'd
 * by its norm (HeadNorms.forward), then as ropeQkv. One WGSL dispatch on webgpu (kernels/rope.ts),
 * where a pass saving activations keeps the q|k|v output for ropeQkvNormedBackward; null
 * elsewhere, for the caller to write it out with ops (which save their own inputs).
 */
export function ropeQkvNormed(qkv: tf.Tensor2D, cos: tf.Tensor3D, sin: tf.Tensor3D, norms: HeadNorms, kvHeads: number, T: number): [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D] | null {
  const fused = ropeQkvNormedKernel(qkv, cos, sin, norms.weights, norms.q.epsilon, kvHeads, T);
  if (fused) savedActivations()?.saveHeadNormsInput(norms, qkv);
  return fused;
}

/**
 * The gradient of the q|k|v projection's output through ropeQkvNormed, from attention's dq, dk
 * and dv and the output `qkv` its forward saved: one WGSL dispatch on webgpu. Throws where the
 * kernel does not apply, since only a webgpu forward saves `qkv`.
 */
export function ropeQkvNormedBackward(dq: tf.Tensor2D, dk: tf.Tensor4D, dv: tf.Tensor4D, cos: tf.Tensor3D, sin: tf.Tensor3D, qkv: tf.Tensor2D, norms: HeadNorms): tf.Tensor2D {
  const dx = ropeQkvNormedGradient(dq, dk, dv, cos, sin, qkv, norms.weights, norms.q.epsilon);
  if (!dx) throw new Error('ropeQkvNormedBackward: the fused q|k|v kernels ran forward but do not apply backward');
  return dx;
}
