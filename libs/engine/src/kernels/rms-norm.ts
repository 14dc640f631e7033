import * as tf from '@tensorflow/tfjs-core';
import { RMS_NORM_WASM } from './rms-norm.wasm';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';

/**
 * RMSNorm as one WebAssembly SIMD kernel on tfjs-wasm (source: libs/engine/kernels/rms-norm.ts),
 * where tfjs runs six: per-op dispatch is a large share of a decoding step (docs/benchmarks.md,
 * "Engine: decode, prefill and memory"). A tfjs kernel for the wasm backend on tfjs's own
 * memory, as the matmul kernel; null where it does not apply, for the caller to use tfjs ops.
 */
const KERNEL_NAME = 'TrainyardRmsNorm';

type RmsNormFunction = (x: number, weight: number, out: number, M: number, C: number, eps: number) => void;

function kernelFor(backend: object): RmsNormFunction | null {
  return (instantiateOnHeap(RMS_NORM_WASM, backend)?.['rmsNorm'] as RmsNormFunction | undefined) ?? null;
}

tf.registerKernel({
  kernelName: KERNEL_NAME,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, weight } = inputs as Record<'x' | 'weight', tf.TensorInfo>;
    const { eps } = attrs as unknown as { eps: number };
    const wasm = backend as unknown as WasmBackendInternals;
    const [M, C] = x.shape;
    const out = wasm.makeOutput([M, C], 'float32');
    (kernelFor(backend) as RmsNormFunction)(heapOffset(wasm, x), heapOffset(wasm, weight), heapOffset(wasm, out), M, C, eps);
    return out;
  },
});

/** eps scalars' values, read once each. */
const epsValues = new WeakMap<tf.Scalar, number>();

/**
 * x [M, C] / sqrt(mean(x^2 over C) + eps) * weight [C], or null where tfjs ops should compute
 * it: another backend, not float32, C not a multiple of 4, or while a gradient is being
 * recorded (the kernel has none). eps: a number, or the scalar the model holds (read once).
 */
export function rmsNorm(x: tf.Tensor2D, weight: tf.Tensor1D, eps: number | tf.Scalar): tf.Tensor2D | null {
  const C = x.shape[1];
  if (tf.getBackend() !== 'wasm' || tf.engine().isTapeOn() || C % 4 !== 0 || x.dtype !== 'float32' || weight.dtype !== 'float32') return null;
  if (weight.shape[0] !== C) throw new Error(`rmsNorm: x [${x.shape}] and weight [${weight.shape}] do not fit together`);
  if (!kernelFor(tf.backend())) return null;
  let value = typeof eps === 'number' ? eps : epsValues.get(eps);
  if (value === undefined) epsValues.set(eps as tf.Scalar, (value = (eps as tf.Scalar).dataSync()[0]));
  return tf.engine().runKernel(KERNEL_NAME, { x, weight }, { eps: value }) as tf.Tensor2D;
}
