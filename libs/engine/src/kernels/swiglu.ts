import * as tf from '@tensorflow/tfjs-core';
import { SWIGLU_WASM } from './swiglu.wasm';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';

/**
 * The MLP's SwiGLU gate, silu(gate) * up from the fused gate|up projection's output, as one
 * WebAssembly SIMD kernel on tfjs-wasm (source: libs/engine/kernels/swiglu.ts), where tfjs
 * runs four (split, sigmoid, multiply, multiply). A tfjs kernel for the wasm backend on
 * tfjs's own memory, as the matmul kernel; null where it does not apply, for the caller to
 * use tfjs ops.
 */
const KERNEL_NAME = 'TrainyardSwiGlu';

const BACKWARD_KERNEL = 'TrainyardSwiGluBackward';

type SwiGluFunction = (gateUp: number, out: number, M: number, F: number) => void;
type SwiGluBackwardFunction = (gateUp: number, dy: number, dGateUp: number, M: number, F: number) => void;

function kernelFor(backend: object): SwiGluFunction | null {
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
    (kernelFor(backend) as SwiGluFunction)(heapOffset(wasm, gateUp), heapOffset(wasm, out), M, twoF / 2);
    return out;
  },
});

/**
 * gate * sigmoid(gate) * up for gateUp [M, 2F] = gate | up side by side: [M, F]; or null
 * where tfjs ops should compute it: another backend, not float32, F not a multiple of 4, or
 * while a gradient is being recorded (the kernel has none).
 */
export function swiglu(gateUp: tf.Tensor2D): tf.Tensor2D | null {
  const twoF = gateUp.shape[1];
  if (tf.getBackend() !== 'wasm' || tf.engine().isTapeOn() || twoF % 8 !== 0 || gateUp.dtype !== 'float32') return null;
  if (!kernelFor(tf.backend())) return null;
  return tf.engine().runKernel(KERNEL_NAME, { gateUp }) as tf.Tensor2D;
}

/**
 * swiglu for a training pass on wasm: the same kernel, with its gradient with respect to
 * gateUp from one backward kernel, where tfjs ops record a split, a sigmoid and two
 * multiplies on the tape and copy what they save. Null where the kernel does not apply.
 */
export function swigluWithGradient(gateUp: tf.Tensor2D): tf.Tensor2D | null {
  const twoF = gateUp.shape[1];
  if (tf.getBackend() !== 'wasm' || twoF % 8 !== 0 || gateUp.dtype !== 'float32' || !kernelFor(tf.backend())) return null;
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const input = args[0] as tf.Tensor;
    (args[1] as tf.GradSaveFunc)([input]);
    return {
      value: tf.engine().runKernel(KERNEL_NAME, { gateUp: input }) as tf.Tensor2D,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => tf.engine().runKernel(BACKWARD_KERNEL, { gateUp: saved[0], dy: dy as tf.Tensor }) as tf.Tensor,
    };
  });
  return f(gateUp) as tf.Tensor2D;
}
