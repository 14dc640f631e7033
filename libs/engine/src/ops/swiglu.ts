import * as tf from '@tensorflow/tfjs-core';
import { splitColumns } from '../kernels/matmul';
import { swiglu as swigluKernel, swigluWithGradient } from '../kernels/swiglu';

/**
 * SwiGLU's gate, silu(gate) * up for gateUp [M, 2F] = gate | up side by side -> [M, F]: one
 * kernel instead of four on wasm, with its backward kernel under a gradient tape
 * (kernels/swiglu.ts); tfjs ops elsewhere.
 */
export function swiglu(gateUp: tf.Tensor2D): tf.Tensor2D {
  const kernel = tf.engine().isTapeOn() ? swigluWithGradient(gateUp) : swigluKernel(gateUp);
  if (kernel) return kernel;
  const [gate, up] = splitColumns(gateUp, [gateUp.shape[1] / 2, gateUp.shape[1] / 2]);
  return tf.mul(tf.mul(gate, tf.sigmoid(gate)), up);
}
