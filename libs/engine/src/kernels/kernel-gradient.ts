import * as tf from '@tensorflow/tfjs-core';

/**
 * An op made of a forward kernel and a backward kernel, as one differentiable op of `inputs`
 * (tf.customGrad): `forward(...inputs)` runs the forward kernel, `backward(dy, saved)` the
 * backward one and gives a gradient for each input. `save` is what the backward pass reads:
 * tfjs keeps those tensors (on wasm, as copies) past the forward pass's scope, which would
 * otherwise have disposed the ones it made or was given. Tensors that outlive the step (frozen
 * weights) need no saving, and saving less copies less.
 */
export function withBackwardKernel<T extends tf.Tensor>(
  inputs: tf.Tensor[],
  save: tf.Tensor[],
  forward: (...inputs: tf.Tensor[]) => T,
  backward: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor | tf.Tensor[],
): T {
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    (args[inputs.length] as tf.GradSaveFunc)(save);
    return {
      value: forward(...(args.slice(0, inputs.length) as tf.Tensor[])),
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => backward(dy as tf.Tensor, saved),
    };
  });
  return f(...inputs) as T;
}
