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

type RopeFunction = (x: number, cos: number, sin: number, out: number, rows: number, D: number) => void;

function kernelFor(backend: object): RopeFunction | null {
  return (instantiateOnHeap(ROPE_WASM, backend)?.['rope'] as RopeFunction | undefined) ?? null;
}

tf.registerKernel({
  kernelName: KERNEL_NAME,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend }) => {
    const { x, cos, sin } = inputs as Record<'x' | 'cos' | 'sin', tf.TensorInfo>;
    const wasm = backend as unknown as WasmBackendInternals;
    const D = x.shape[x.shape.length - 1];
    const rows = x.shape.reduce((a, b) => a * b, 1) / D;
    const out = wasm.makeOutput(x.shape, 'float32');
    (kernelFor(backend) as RopeFunction)(heapOffset(wasm, x), heapOffset(wasm, cos), heapOffset(wasm, sin), heapOffset(wasm, out), rows, D);
    return out;
  },
});

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
