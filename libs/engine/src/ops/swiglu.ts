import * as tf from '@tensorflow/tfjs-core';
import { splitColumns } from '../kernels/matmul';
import { swiglu as swigluKernel, swigluGradient, swigluWithGradient } from '../kernels/swiglu';
import { savedActivations } from './saved-activations';

/**
 * SwiGLU's gate, silu(gate) * up for gateUp [M, 2F] = gate | up side by side -> [M, F]: one
 * kernel instead of four on wasm, with its backward kernel under a gradient tape
 * (kernels/swiglu.ts); one WGSL dispatch on webgpu outside a tape; tfjs ops elsewhere. In a pass that saves activations for an explicit
 * backward it saves gateUp, which swigluBackward reads.
 */
export function swiglu(gateUp: tf.Tensor2D): tf.Tensor2D {
  savedActivations()?.saveGateInput(gateUp);
  const kernel = tf.engine().isTapeOn() ? swigluWithGradient(gateUp) : swigluKernel(gateUp);
  if (kernel) return kernel;
  const [gate, up] = splitColumns(gateUp, [gateUp.shape[1] / 2, gateUp.shape[1] / 2]);
  return tf.mul(tf.mul(gate, tf.sigmoid(gate)), up);
}

/**
 * d loss / d gateUp [M, 2F] of swiglu from its output's gradient dy [M, F]. With s = sigmoid(g),
 * y = g s u, and silu'(g) = s (1 + g (1 - s)):
 *
 *   d gate = dy u s (1 + g (1 - s)),   d up = dy g s
 *
 * side by side as gateUp is. The backward kernel on wasm, one WGSL dispatch on webgpu, tfjs ops
 * elsewhere.
 */
export function swigluBackward(gateUp: tf.Tensor2D, dy: tf.Tensor2D): tf.Tensor2D {
  const kernel = swigluGradient(gateUp, dy);
  if (kernel) return kernel;
  return tf.tidy(() => {
    const [g, u] = splitColumns(gateUp, [gateUp.shape[1] / 2, gateUp.shape[1] / 2]);
    const s = tf.sigmoid(g);
    const gs = tf.mul(g, s);
    const dGate = tf.mul(tf.mul(dy, u), tf.add(s, tf.mul(gs, tf.sub(1, s))));
    return tf.concat([dGate, tf.mul(dy, gs)], 1) as tf.Tensor2D;
  });
}
