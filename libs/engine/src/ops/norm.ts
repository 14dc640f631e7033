import * as tf from '@tensorflow/tfjs-core';
import { rmsNorm as rmsNormKernel, rmsNormGradient, rmsNormWithGradient } from '../kernels/rms-norm';
import { savedActivations } from './saved-activations';

/**
 * RMSNorm, x [M, C] / sqrt(mean(x^2 over C) + eps) * weight [C]: one kernel instead of six on
 * wasm, with its backward kernel under a gradient tape; one WGSL dispatch instead of five on
 * webgpu (kernels/rms-norm.ts); tfjs ops elsewhere. `epsilon` is eps as a number, for the
 * kernels, and `eps` as a tensor, shared by a model's norms, for the ops. In a pass that saves
 * activations for an explicit backward (ops/saved-activations.ts) it saves its input x, which
 * rmsNormBackward reads.
 */
export function rmsNorm(x: tf.Tensor2D, weight: tf.Tensor1D, epsilon: number, eps: tf.Scalar): tf.Tensor2D {
  savedActivations()?.saveNormInput(weight, x);
  const kernel = tf.engine().isTapeOn() ? rmsNormWithGradient(x, weight, epsilon) : rmsNormKernel(x, weight, epsilon);
  if (kernel) return kernel;
  const meanSquare = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(meanSquare, eps))), weight);
}

/**
 * d loss / d x of rmsNorm from its output's gradient dy (the weight is frozen: it gets none).
 * With r = 1 / sqrt(mean(x^2) + eps) per row and g = dy * weight, y = x r weight gives
 *
 *   dx = r g - x r^3 mean(g x)
 *
 * (the second term is the gradient through r: dr/dx = -r^3 x / C). Gemma's norms, which scale
 * by 1 + w, hold that sum as their weight (the loader adds it), so the same maths applies. With
 * `residual` (the gradient the residual stream carries past the norm) it returns dx + residual.
 * The backward kernel on wasm, one WGSL dispatch on webgpu, residual included (kernels/rms-norm.ts),
 * tfjs ops elsewhere.
 */
export function rmsNormBackward(x: tf.Tensor2D, weight: tf.Tensor1D, dy: tf.Tensor2D, epsilon: number, eps: tf.Scalar, residual: tf.Tensor2D | null = null): tf.Tensor2D {
  const kernel = rmsNormGradient(x, weight, dy, epsilon, residual);
  if (kernel) return kernel;
  return tf.tidy(() => {
    const r = tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps));
    const g = tf.mul(dy, weight);
    const meanGx = tf.mean(tf.mul(g, x), -1, true);
    const dx = tf.sub(tf.mul(g, r), tf.mul(x, tf.mul(tf.pow(r, 3), meanGx))) as tf.Tensor2D;
    return residual ? (tf.add(dx, residual) as tf.Tensor2D) : dx;
  });
}
