import * as tf from '@tensorflow/tfjs-core';
import { ROPE_WASM } from './rope.wasm';
import { ROPE_KERNEL } from './rope.webgpu';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';
import { fusedKernelsApply } from './webgpu-program';

/**
 * Rotary position embeddings (model/rope.ts) as one WebAssembly SIMD kernel on tfjs-wasm
 * (source: libs/engine/kernels/rope.ts), where tfjs runs six, with the same bits. A tfjs
 * kernel for the wasm backend on tfjs's own memory, as the matmul kernel; null where it does
 * not apply, for the caller to use tfjs ops. On webgpu the same kernel name runs a WGSL
 * program (rope.webgpu.ts).
 */
const KERNEL_NAME = ROPE_KERNEL;

const BACKWARD_KERNEL = 'TrainyardRopeBackward';

/** rope(x, cos, sin, out, rows, D), and ropeBackward(dy, cos, sin, dx, rows, D) alike. */
type RopeFunction = (x: number, cos: number, sin: number, out: number, rows: number, D: number) => void;

function kernelFor(backend: object, name: 'rope' | 'ropeBackward' = 'rope'): RopeFunction | null {
  return (instantiateOnHeap(ROPE_WASM, backend)?.[name] as RopeFunction | undefined) ?? null;
}

for (const [kernelName, name] of [
  [KERNEL_NAME, 'rope'],
  [BACKWARD_KERNEL, 'ropeBackward'],
] as const) {
  tf.registerKernel({
    kernelName,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend }) => {
      const { x, cos, sin } = inputs as Record<'x' | 'cos' | 'sin', tf.TensorInfo>;
      const wasm = backend as unknown as WasmBackendInternals;
      const D = x.shape[x.shape.length - 1];
      const rows = x.shape.reduce((a, b) => a * b, 1) / D;
      const out = wasm.makeOutput(x.shape, 'float32');
      (kernelFor(backend, name) as RopeFunction)(heapOffset(wasm, x), heapOffset(wasm, cos), heapOffset(wasm, sin), heapOffset(wasm, out), rows, D);
      return out;
    },
  });
}

/**
 * x * cos + rotate_half(x) * sin for x, cos and sin [N, heads, D] (rotate_half(x) = [-x2, x1]
 * over the last axis), or null where tfjs ops should compute it: another backend, fused webgpu
 * kernels off, not float32, D not a multiple of 8 on wasm (2 on webgpu), cos or sin of another
 * shape, or while a gradient is being recorded (the kernels have none).
 */
export function rope(x: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor3D | null {
  const D = x.shape[2];
  if ([x, cos, sin].some((t) => t.dtype !== 'float32')) return null;
  if (![cos, sin].every((t) => t.shape.length === x.shape.length && t.shape.every((n, i) => n === x.shape[i]))) return null;
  const wasm = tf.getBackend() === 'wasm' && !tf.engine().isTapeOn() && D % 8 === 0 && kernelFor(tf.backend()) !== null;
  if (!wasm && !(fusedKernelsApply() && D % 2 === 0)) return null;
  return tf.engine().runKernel(KERNEL_NAME, { x, cos, sin }) as tf.Tensor3D;
}

/**
 * rope for a training pass on wasm: the same kernel, with its gradient with respect to x from
 * one backward kernel (cos and sin are tables, not trained), where tfjs ops record a matMul by
 * the rotation, two multiplies and an add on the tape. Null where the kernel does not apply.
 */
export function ropeWithGradient(x: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor3D | null {
  const D = x.shape[2];
  if ([x, cos, sin].some((t) => t.dtype !== 'float32')) return null;
  if (![cos, sin].every((t) => t.shape.length === x.shape.length && t.shape.every((n, i) => n === x.shape[i]))) return null;
  if (tf.getBackend() !== 'wasm' || D % 8 !== 0 || kernelFor(tf.backend()) === null) return null;
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const input = args[0] as tf.Tensor;
    // The tables are saved: they belong to the forward pass's scope, gone by the backward pass.
    (args[1] as tf.GradSaveFunc)([cos, sin]);
    return {
      value: tf.engine().runKernel(KERNEL_NAME, { x: input, cos, sin }) as tf.Tensor3D,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => tf.engine().runKernel(BACKWARD_KERNEL, { x: dy as tf.Tensor, cos: saved[0], sin: saved[1] }) as tf.Tensor,
    };
  });
  return f(x) as tf.Tensor3D;
}
