import * as tf from '@tensorflow/tfjs-core';

/**
 * tfjs's Identity on the wasm backend, sharing the input's buffer (reference counted) instead
 * of copying it, as tfjs's cpu backend and the wasm backend's own Reshape do. tfjs runs
 * Identity for every tensor a gradient tape saves (it clones them): 816 copies in a LoRA
 * training step of a 30-layer model, about 20 ms of it (docs/benchmarks.md, "Training step").
 * Tensors are immutable, and no kernel of the engine writes into its inputs, so a shared
 * buffer is never changed under a tensor that holds it.
 */
interface RefCountingBackend {
  incRef(dataId: object): void;
}

export function shareIdentityBuffers(): void {
  tf.unregisterKernel(tf.Identity, 'wasm');
  tf.registerKernel({
    kernelName: tf.Identity,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend }) => {
      const { x } = inputs as { x: tf.TensorInfo };
      (backend as unknown as RefCountingBackend).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    },
  });
}
