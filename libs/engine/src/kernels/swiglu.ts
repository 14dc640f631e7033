import * as tf from '@tensorflow/tfjs-core';
import { SWIGLU_WASM } from './swiglu.wasm';
import { SWIGLU_BACKWARD_KERNEL, SWIGLU_KERNEL } from './swiglu.webgpu';
import { withBackwardKernel } from './kernel-gradient';
import { fusedKernelsApply } from './webgpu-program';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';

/**
 * The MLP's SwiGLU gate, silu(gate) * up from the fused gate|up projection's output, as one
 * WebAssembly SIMD kernel on tfjs-wasm (source: libs/engine/assembly/swiglu.ts), where tfjs
 * runs four (split, sigmoid, multiply, multiply). A tfjs kernel for the wasm backend on
 * tfjs's own memory, as the matmul kernel; null where it does not apply, for the caller to
 * use tfjs ops. On webgpu the same kernel name runs a WGSL program (swiglu.webgpu.ts).
 */
const KERNEL_NAME = SWIGLU_KERNEL;

const BACKWARD_KERNEL = SWIGLU_BACKWARD_KERNEL;

type SwiGluFunction = (gateUp: number, out: number, M: number, F: number) => void;
type SwiGluBackwardFunction = (gateUp: number, dy: number, dGateUp: number, M: number, F: number) => void;

/** The kernel instantiated on this backend's memory, or null when the backend does not expose it (also for kernels/decode-block.ts). */
export function swigluKernelFor(backend: object): SwiGluFunction | null {
  return (instantiateOnHeap(SWIGLU_WASM, backend)?.['swiglu'] as SwiGluFunction | undefined) ?? null;
}

tf.registerKernel({
  kernelName: BACKWARD_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend }) => {
    const { gateUp, dy } = inputs as Record<'gateUp' | 'dy', tf.TensorInfo>;
    const wasm = backend as unknown as WasmBackendInternals;
    const [M, twoF] = gateUp.shape;
    const dGateUp = wasm.makeOutput([M, twoF], 'float32');
    const backward = instantiateOnHeap(SWIGLU_WASM, backend)?.['swigluBackward'] as SwiGluBackwardFunction;
    backward(heapOffset(wasm, gateUp), heapOffset(wasm, dy), heapOffset(wasm, dGateUp), M, twoF / 2);
    return dGateUp;
  },
});

tf.registerKernel({
  kernelName: KERNEL_NAME,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend }) => {
    const { gateUp } = inputs as Record<'gateUp', tf.TensorInfo>;
    const wasm = backend as unknown as WasmBackendInternals;
    const [M, twoF] = gateUp.shape;
    const out = wasm.makeOutput([M, twoF / 2], 'float32');
    (swigluKernelFor(backend) as SwiGluFunction)(heapOffset(wasm, gateUp), heapOffset(wasm, out), M, twoF / 2);
    return out;
  },
});

/**
 * gate * sigmoid(gate) * up for gateUp [M, 2F] = gate | up side by side: [M, F]; or null
 * where tfjs ops should compute it: another backend, fused webgpu kernels off, not float32, F
 * not a multiple of 4 on wasm, or while a gradient is being recorded (the kernel has none).
 */
export function swiglu(gateUp: tf.Tensor2D): tf.Tensor2D | null {
  if (tf.engine().isTapeOn() || !(onWasm(gateUp) || (fusedKernelsApply() && gateUp.dtype === 'float32' && gateUp.shape[1] % 2 === 0))) return null;
  return tf.engine().runKernel(KERNEL_NAME, { gateUp }) as tf.Tensor2D;
}

/** Whether the kernels take gateUp [M, 2F] (float32, F a multiple of 4) on the current backend. */
function onWasm(gateUp: tf.Tensor2D): boolean {
  return tf.getBackend() === 'wasm' && gateUp.shape[1] % 8 === 0 && gateUp.dtype === 'float32' && swigluKernelFor(tf.backend()) !== null;
}

/**
 * swiglu for a training pass on wasm: the same kernel, with its gradient with respect to
 * gateUp from one backward kernel, where tfjs ops record a split, a sigmoid and two
 * multiplies on the tape and copy what they save. Null where the kernel does not apply.
 */
export function swigluWithGradient(gateUp: tf.Tensor2D): tf.Tensor2D | null {
  if (!onWasm(gateUp)) return null;
  return withBackwardKernel(
    [gateUp],
    [gateUp],
    (input) => tf.engine().runKernel(KERNEL_NAME, { gateUp: input }) as tf.Tensor2D,
    (dy, [saved]) => tf.engine().runKernel(BACKWARD_KERNEL, { gateUp: saved, dy }) as tf.Tensor,
  );
}

/**
 * The backward kernel alone: d gateUp [M, 2F] of swiglu for its output's gradient dy [M, F], on
 * wasm, or on webgpu as one WGSL dispatch (swiglu.webgpu.ts) where the fused kernels apply; null
 * elsewhere. What an explicit backward (ops/swiglu.ts, swigluBackward) runs without a tape.
 */
export function swigluGradient(gateUp: tf.Tensor2D, dy: tf.Tensor2D): tf.Tensor2D | null {
  if (gateUp.dtype !== 'float32' || dy.dtype !== 'float32') return null;
  if (!onWasm(gateUp) && !fusedKernelsApply()) return null;
  return tf.engine().runKernel(BACKWARD_KERNEL, { gateUp, dy }) as tf.Tensor2D;
}
