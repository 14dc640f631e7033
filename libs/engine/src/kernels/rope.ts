import * as tf from '@tensorflow/tfjs-core';
import { ROPE_WASM } from './rope.wasm';
import { ROPE_KERNEL, ROPE_QKV_BACKWARD_KERNEL, ROPE_QKV_KERNEL, ROPE_QKV_NORMED_BACKWARD_KERNEL, ROPE_QKV_NORMED_KERNEL } from './rope.webgpu';
import { withBackwardKernel } from './kernel-gradient';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';
import { fusedKernelsApply } from './webgpu-program';

/**
 * Rotary position embeddings (model/rope.ts) as one WebAssembly SIMD kernel on tfjs-wasm
 * (source: libs/engine/assembly/rope.ts), where tfjs runs six, with the same bits. A tfjs
 * kernel for the wasm backend on tfjs's own memory, as the matmul kernel; null where it does
 * not apply, for the caller to use tfjs ops. On webgpu the same kernel name runs a WGSL
 * program (rope.webgpu.ts).
 */
const KERNEL_NAME = ROPE_KERNEL;

const BACKWARD_KERNEL = 'TrainyardRopeBackward';

/** rope(x, cos, sin, out, rows, D), and ropeBackward(dy, cos, sin, dx, rows, D) alike. */
type RopeFunction = (x: number, cos: number, sin: number, out: number, rows: number, D: number) => void;

/** The kernel (or its backward) instantiated on this backend's memory, or null when the backend does not expose it (also for kernels/decode-block.ts). */
export function ropeKernelFor(backend: object, name: 'rope' | 'ropeBackward' = 'rope'): RopeFunction | null {
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
      (ropeKernelFor(backend, name) as RopeFunction)(heapOffset(wasm, x), heapOffset(wasm, cos), heapOffset(wasm, sin), heapOffset(wasm, out), rows, D);
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
  if (!tablesFit(x, cos, sin)) return null;
  if (!(onWasm(x) && !tf.engine().isTapeOn()) && !(fusedKernelsApply() && x.shape[2] % 2 === 0)) return null;
  return tf.engine().runKernel(KERNEL_NAME, { x, cos, sin }) as tf.Tensor3D;
}

/** Whether x, cos and sin are float32 of one shape. */
function tablesFit(x: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D): boolean {
  return [x, cos, sin].every((t) => t.dtype === 'float32') && [cos, sin].every((t) => t.shape.length === x.shape.length && t.shape.every((n, i) => n === x.shape[i]));
}

/** Whether the wasm kernels take x [N, heads, D] (D a multiple of 8) on the current backend. */
function onWasm(x: tf.Tensor3D): boolean {
  return tf.getBackend() === 'wasm' && x.shape[2] % 8 === 0 && ropeKernelFor(tf.backend()) !== null;
}

/**
 * rope for a training pass on wasm: the same kernel, with its gradient with respect to x from
 * one backward kernel (cos and sin are tables, not trained), where tfjs ops record a matMul by
 * the rotation, two multiplies and an add on the tape. Null where the kernel does not apply.
 */
export function ropeWithGradient(x: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor3D | null {
  if (!tablesFit(x, cos, sin) || !onWasm(x)) return null;
  // The backward pass reads the tables, not x.
  return withBackwardKernel(
    [x],
    [cos, sin],
    (input) => tf.engine().runKernel(KERNEL_NAME, { x: input, cos, sin }) as tf.Tensor3D,
    (dy, [c, s]) => tf.engine().runKernel(BACKWARD_KERNEL, { x: dy, cos: c, sin: s }) as tf.Tensor,
  );
}

/**
 * The backward kernel alone on wasm: dx of rope for its output's gradient dy, or null where it
 * does not apply (another backend, not float32, D not a multiple of 8). What an explicit
 * backward (ops/rope.ts, ropeBackward) runs without a tape.
 */
export function ropeGradient(dy: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor3D | null {
  if (!tablesFit(dy, cos, sin) || !onWasm(dy)) return null;
  return tf.engine().runKernel(BACKWARD_KERNEL, { x: dy, cos, sin }) as tf.Tensor3D;
}

/**
 * d(q|k|v) [N, (H + 2 KV) D] from attention's dq [N, H*D], dk and dv [B, KV, T, D] through RoPE
 * (tables cos, sin [N, H + KV, D]) in one WGSL dispatch (rope.webgpu.ts), or null where it does
 * not apply: not webgpu with the fused kernels, not float32, D odd.
 */
export function ropeQkvGradient(dq: tf.Tensor2D, dk: tf.Tensor4D, dv: tf.Tensor4D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor2D | null {
  if (!fusedKernelsApply() || cos.shape[2] % 2 !== 0 || [dq, dk, dv, cos, sin].some((t) => t.dtype !== 'float32')) return null;
  return tf.engine().runKernel(ROPE_QKV_BACKWARD_KERNEL, { dq, dk, dv, cos, sin }) as tf.Tensor2D;
}

/**
 * q|k|v's projection output [N, (H + 2 KV) D] made ready for attention in one WGSL dispatch
 * (rope.webgpu.ts): q rotated, token-major [N, H*D]; k rotated and v, heads-first [B, KV, T, D];
 * tables cos, sin [N, H + KV, D]. Null where it does not apply: not webgpu with the fused kernels
 * (a gradient tape among them), not float32, D odd.
 */
export function ropeQkv(qkv: tf.Tensor2D, cos: tf.Tensor3D, sin: tf.Tensor3D, kvHeads: number, T: number): [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D] | null {
  const [N, heads, D] = cos.shape;
  if (!fusedKernelsApply() || D % 2 !== 0 || [qkv, cos, sin].some((t) => t.dtype !== 'float32')) return null;
  if (qkv.shape[0] !== N || qkv.shape[1] !== (heads + kvHeads) * D || N % T !== 0) {
    throw new Error(`ropeQkv: q|k|v ${qkv.shape} does not fit tables ${cos.shape} with ${kvHeads} KV heads and ${T} tokens a row`);
  }
  return tf.engine().runKernel(ROPE_QKV_KERNEL, { qkv, cos, sin }, { kvHeads, T }) as unknown as [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D];
}

/** Whether ropeQkvNormed runs for heads of `headDim` now (float32 inputs given): webgpu with the fused kernels, outside a tape, D even. */
export function ropeQkvNormedApplies(headDim: number): boolean {
  return fusedKernelsApply() && headDim % 2 === 0;
}

/**
 * ropeQkv with each q and k head RMSNorm'd first (q_norm and k_norm: gamma [2 D], their weights
 * side by side, and their epsilon), in one WGSL dispatch (rope.webgpu.ts); null where it does not
 * apply, as ropeQkv.
 */
export function ropeQkvNormed(
  qkv: tf.Tensor2D,
  cos: tf.Tensor3D,
  sin: tf.Tensor3D,
  gamma: tf.Tensor1D,
  eps: number,
  kvHeads: number,
  T: number,
): [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D] | null {
  const [N, heads, D] = cos.shape;
  if (!ropeQkvNormedApplies(D) || [qkv, cos, sin, gamma].some((t) => t.dtype !== 'float32')) return null;
  if (qkv.shape[0] !== N || qkv.shape[1] !== (heads + kvHeads) * D || N % T !== 0 || gamma.size !== 2 * D) {
    throw new Error(`ropeQkvNormed: q|k|v ${qkv.shape} and norm weights ${gamma.shape} do not fit tables ${cos.shape} with ${kvHeads} KV heads and ${T} tokens a row`);
  }
  return tf.engine().runKernel(ROPE_QKV_NORMED_KERNEL, { qkv, cos, sin, gamma }, { kvHeads, T, eps }) as unknown as [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D];
}

/**
 * ropeQkvNormed's gradient: d(q|k|v) [N, (H + 2 KV) D] from attention's dq, dk and dv and the
 * q|k|v output `qkv` the forward read, in one WGSL dispatch; null where it does not apply.
 */
export function ropeQkvNormedGradient(
  dq: tf.Tensor2D,
  dk: tf.Tensor4D,
  dv: tf.Tensor4D,
  cos: tf.Tensor3D,
  sin: tf.Tensor3D,
  qkv: tf.Tensor2D,
  gamma: tf.Tensor1D,
  eps: number,
): tf.Tensor2D | null {
  if (!fusedKernelsApply() || cos.shape[2] % 2 !== 0 || [dq, dk, dv, cos, sin, qkv, gamma].some((t) => t.dtype !== 'float32')) return null;
  return tf.engine().runKernel(ROPE_QKV_NORMED_BACKWARD_KERNEL, { dq, dk, dv, cos, sin, qkv, gamma }, { eps }) as tf.Tensor2D;
}
