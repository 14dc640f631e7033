import * as tf from '@tensorflow/tfjs-core';
import { rmsNorm as rmsNormKernel, rmsNormWithGradient } from '../kernels/rms-norm';

/**
 * RMSNorm, x [M, C] / sqrt(mean(x^2 over C) + eps) * weight [C]: one kernel instead of six on
 * wasm, with its backward kernel under a gradient tape; one WGSL dispatch instead of five on
 * webgpu (kernels/rms-norm.ts); tfjs ops elsewhere. `epsilon` is eps as a number, for the
 * kernels, and `eps` as a tensor, shared by a model's norms, for the ops.
 */
export function rmsNorm(x: tf.Tensor2D, weight: tf.Tensor1D, epsilon: number, eps: tf.Scalar): tf.Tensor2D {
  const kernel = tf.engine().isTapeOn() ? rmsNormWithGradient(x, weight, epsilon) : rmsNormKernel(x, weight, epsilon);
  if (kernel) return kernel;
  const meanSquare = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(meanSquare, eps))), weight);
}
