import * as tf from '@tensorflow/tfjs-core';
import { splitColumns } from '../kernels/matmul';

/**
 * GELU's tanh approximation (PyTorch's gelu(approximate="tanh")), g(x) = x/2 (1 + tanh(u)) with
 * u = sqrt(2/pi) (x + 0.044715 x^3), with its gradient written out, so that a training step
 * keeps only x for it: g'(x) = (1 + tanh(u))/2 + x/2 (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
 */
export function geluTanh(x: tf.Tensor2D): tf.Tensor2D {
  const c = Math.sqrt(2 / Math.PI);
  const tanhU = (v: tf.Tensor) => tf.tanh(tf.mul(tf.add(v, tf.mul(tf.mul(tf.mul(v, v), v), 0.044715)), c));
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const v = args[0] as tf.Tensor2D;
    (args[1] as tf.GradSaveFunc)([v]);
    return {
      value: tf.mul(tf.mul(v, 0.5), tf.add(tanhU(v), 1)) as tf.Tensor2D,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) =>
        tf.tidy(() => {
          const [s] = saved;
          const t = tanhU(s);
          const du = tf.mul(tf.add(tf.mul(tf.mul(s, s), 3 * 0.044715), 1), c);
          const slope = tf.add(tf.mul(tf.add(t, 1), 0.5), tf.mul(tf.mul(tf.mul(s, 0.5), tf.sub(1, tf.square(t))), du));
          return tf.mul(dy as tf.Tensor, slope);
        }),
    };
  });
  return f(x) as tf.Tensor2D;
}

/** GeGLU's gate, gelu(gate) * up for gateUp [M, 2F] = gate | up side by side -> [M, F], with tfjs ops on every backend. */
export function geglu(gateUp: tf.Tensor2D): tf.Tensor2D {
  const [gate, up] = splitColumns(gateUp, [gateUp.shape[1] / 2, gateUp.shape[1] / 2]);
  return tf.mul(geluTanh(gate), up);
}
