import * as tf from '@tensorflow/tfjs-core';
import { rope as ropeKernel, ropeWithGradient } from '../kernels/rope';

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
