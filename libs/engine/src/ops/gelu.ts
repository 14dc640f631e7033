import * as tf from '@tensorflow/tfjs-core';
import { splitColumns } from '../kernels/matmul';
import { geglu as gegluKernel, gegluGradient } from '../kernels/swiglu.webgpu';
import { savedActivations } from './saved-activations';

const C = Math.sqrt(2 / Math.PI);

/** tanh(u) with u = sqrt(2/pi) (x + 0.044715 x^3). */
function tanhU(x: tf.Tensor): tf.Tensor {
  return tf.tanh(tf.mul(tf.add(x, tf.mul(tf.mul(tf.mul(x, x), x), 0.044715)), C));
}

/** g(x) = x/2 (1 + tanh(u)). */
function geluValue(x: tf.Tensor): tf.Tensor {
  return tf.mul(tf.mul(x, 0.5), tf.add(tanhU(x), 1));
}

/** g'(x) = (1 + tanh(u))/2 + x/2 (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2). */
function geluSlope(x: tf.Tensor): tf.Tensor {
  const t = tanhU(x);
  const du = tf.mul(tf.add(tf.mul(tf.mul(x, x), 3 * 0.044715), 1), C);
  return tf.add(tf.mul(tf.add(t, 1), 0.5), tf.mul(tf.mul(tf.mul(x, 0.5), tf.sub(1, tf.square(t))), du));
}

/**
 * GELU's tanh approximation (PyTorch's gelu(approximate="tanh")), g(x) = x/2 (1 + tanh(u)) with
 * u = sqrt(2/pi) (x + 0.044715 x^3), with its gradient written out (geluSlope), so that a
 * training step keeps only x for it.
 */
export function geluTanh(x: tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const v = args[0] as tf.Tensor2D;
    (args[1] as tf.GradSaveFunc)([v]);
    return {
      value: geluValue(v) as tf.Tensor2D,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => tf.tidy(() => tf.mul(dy as tf.Tensor, geluSlope(saved[0]))),
    };
  });
  return f(x) as tf.Tensor2D;
}

/**
 * GeGLU's gate, gelu(gate) * up for gateUp [M, 2F] = gate | up side by side -> [M, F]: one WGSL
 * dispatch on webgpu outside a tape (kernels/swiglu.webgpu.ts), tfjs ops elsewhere. In a pass
 * that saves activations for an explicit backward it saves gateUp, which gegluBackward reads.
 */
export function geglu(gateUp: tf.Tensor2D): tf.Tensor2D {
  savedActivations()?.saveGateInput(gateUp);
  const kernel = gegluKernel(gateUp);
  if (kernel) return kernel;
  const [gate, up] = splitColumns(gateUp, [gateUp.shape[1] / 2, gateUp.shape[1] / 2]);
  return tf.mul(geluTanh(gate), up);
}

/**
 * d loss / d gateUp [M, 2F] of geglu from its output's gradient dy [M, F]: y = g(gate) up, so
 *
 *   d gate = dy up g'(gate),   d up = dy g(gate)
 *
 * side by side as gateUp is. One WGSL dispatch on webgpu, tfjs ops elsewhere.
 */
export function gegluBackward(gateUp: tf.Tensor2D, dy: tf.Tensor2D): tf.Tensor2D {
  const kernel = gegluGradient(gateUp, dy);
  if (kernel) return kernel;
  return tf.tidy(() => {
    const [gate, up] = splitColumns(gateUp, [gateUp.shape[1] / 2, gateUp.shape[1] / 2]);
    return tf.concat([tf.mul(tf.mul(dy, up), geluSlope(gate)), tf.mul(dy, geluValue(gate))], 1) as tf.Tensor2D;
  });
}
