import * as tf from '@tensorflow/tfjs-core';
import { RMS_NORM_WASM } from './rms-norm.wasm';
import { RMS_NORM_BACKWARD_KERNEL, RMS_NORM_KERNEL } from './rms-norm.webgpu';
import { withBackwardKernel } from './kernel-gradient';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';
import { fusedKernelsApply } from './webgpu-program';

/**
 * RMSNorm as one WebAssembly SIMD kernel on tfjs-wasm (source: libs/engine/assembly/rms-norm.ts),
 * where tfjs runs six: per-op dispatch is a large share of a decoding step (docs/benchmarks.md,
 * "Engine: decode, prefill and memory"). A tfjs kernel for the wasm backend on tfjs's own
 * memory, as the matmul kernel; null where it does not apply, for the caller to use tfjs ops.
 * On webgpu the same kernel name runs a WGSL program (rms-norm.webgpu.ts).
 */
const KERNEL_NAME = RMS_NORM_KERNEL;

const BACKWARD_KERNEL = RMS_NORM_BACKWARD_KERNEL;

type RmsNormFunction = (x: number, weight: number, out: number, M: number, C: number, eps: number) => void;
type RmsNormBackwardFunction = (x: number, weight: number, dy: number, dx: number, M: number, C: number, eps: number) => void;

/** The kernel instantiated on this backend's memory, or null when the backend does not expose it (also for kernels/decode-block.ts). */
export function rmsNormKernelFor(backend: object): RmsNormFunction | null {
  return (instantiateOnHeap(RMS_NORM_WASM, backend)?.['rmsNorm'] as RmsNormFunction | undefined) ?? null;
}

function backwardFor(backend: object): RmsNormBackwardFunction {
  return instantiateOnHeap(RMS_NORM_WASM, backend)?.['rmsNormBackward'] as RmsNormBackwardFunction;
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
    (rmsNormKernelFor(backend) as RmsNormFunction)(heapOffset(wasm, x), heapOffset(wasm, weight), heapOffset(wasm, out), M, C, eps);
    return out;
  },
});

tf.registerKernel({
  kernelName: BACKWARD_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, weight, dy } = inputs as Record<'x' | 'weight' | 'dy', tf.TensorInfo>;
    const { eps } = attrs as unknown as { eps: number };
    const wasm = backend as unknown as WasmBackendInternals;
    const [M, C] = x.shape;
    const dx = wasm.makeOutput([M, C], 'float32');
    backwardFor(backend)(heapOffset(wasm, x), heapOffset(wasm, weight), heapOffset(wasm, dy), heapOffset(wasm, dx), M, C, eps);
    return dx;
  },
});

/**
 * x [M, C] / sqrt(mean(x^2 over C) + eps) * weight [C], or null where tfjs ops should compute
 * it: another backend, fused webgpu kernels off, not float32, C not a multiple of 4 on wasm, or
 * while a gradient is being recorded (the kernels have none).
 */
export function rmsNorm(x: tf.Tensor2D, weight: tf.Tensor1D, eps: number): tf.Tensor2D | null {
  if (!float32(x, weight)) return null;
  if (!(onWasm(x) && !tf.engine().isTapeOn()) && !fusedKernelsApply()) return null;
  assertWeightFits(x, weight);
  return tf.engine().runKernel(KERNEL_NAME, { x, weight }, { eps }) as tf.Tensor2D;
}

function float32(x: tf.Tensor2D, weight: tf.Tensor1D): boolean {
  return x.dtype === 'float32' && weight.dtype === 'float32';
}

/** Whether the wasm kernels take x [M, C] (C a multiple of 4) on the current backend. */
function onWasm(x: tf.Tensor2D): boolean {
  return tf.getBackend() === 'wasm' && x.shape[1] % 4 === 0 && rmsNormKernelFor(tf.backend()) !== null;
}

function assertWeightFits(x: tf.Tensor2D, weight: tf.Tensor1D): void {
  if (weight.shape[0] !== x.shape[1]) throw new Error(`rmsNorm: x [${x.shape}] and weight [${weight.shape}] do not fit together`);
}

/**
 * rmsNorm for a training pass on wasm: the same kernel, with a gradient with respect to x
 * from one backward kernel (the weight is frozen: it gets none), where tfjs ops record six
 * kernels on the tape, copy what they save, and run about a dozen more backward. Null where
 * the kernel does not apply (another backend, not float32, C not a multiple of 4).
 */
export function rmsNormWithGradient(x: tf.Tensor2D, weight: tf.Tensor1D, eps: number): tf.Tensor2D | null {
  if (!float32(x, weight) || !onWasm(x)) return null;
  assertWeightFits(x, weight);
  return withBackwardKernel(
    [x],
    [x],
    (input) => tf.engine().runKernel(KERNEL_NAME, { x: input, weight }, { eps }) as tf.Tensor2D,
    (dy, [saved]) => tf.engine().runKernel(BACKWARD_KERNEL, { x: saved, weight, dy }, { eps }) as tf.Tensor,
  );
}

/**
 * The backward kernel alone: dx of rmsNorm for its output's gradient dy (the weight is frozen),
 * on wasm, or on webgpu as one WGSL dispatch (rms-norm.webgpu.ts) where the fused kernels apply;
 * null elsewhere, for the caller to use tfjs ops. With `residual`, dx + residual (on webgpu in
 * the same dispatch). What an explicit backward (ops/norm.ts, rmsNormBackward) runs without a tape.
 */
export function rmsNormGradient(x: tf.Tensor2D, weight: tf.Tensor1D, dy: tf.Tensor2D, eps: number, residual: tf.Tensor2D | null = null): tf.Tensor2D | null {
  if (!float32(x, weight) || dy.dtype !== 'float32' || (!onWasm(x) && !fusedKernelsApply())) return null;
  assertWeightFits(x, weight);
  // On webgpu the program adds the residual gradient itself; the wasm kernel's dx gets it added after.
  if (residual && !onWasm(x)) return tf.engine().runKernel(BACKWARD_KERNEL, { x, weight, dy, residual }, { eps }) as tf.Tensor2D;
  const dx = () => tf.engine().runKernel(BACKWARD_KERNEL, { x, weight, dy }, { eps }) as tf.Tensor2D;
  return residual ? tf.tidy(() => tf.add(dx(), residual) as tf.Tensor2D) : dx();
}
