import * as tf from '@tensorflow/tfjs-core';
import { matMulKernelAvailable, PackedWeights } from './matmul';
import { MATMUL_TRANSPOSED_WASM } from './matmul-transposed.wasm';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';

/**
 * The input gradient of a frozen projection, dx [M, K] = dy [M, N] W^T, from the panels that
 * packWeights made of W [K, N] for the forward pass (source, with the why of its loops:
 * libs/engine/kernels/matmul-transposed.ts). Training then multiplies by each weight matrix
 * from one packed copy both ways, and never hands W to XNNPACK, which would pack a copy of
 * its own. A tfjs kernel for the wasm backend on tfjs's own memory, like packedMatMul.
 */
const KERNEL = 'TrainyardPackedMatMulTransposed';

interface Kernels {
  matmulTransposedF32(dy: number, packed: number, dx: number, M: number, K: number, N: number, dyT: number, acc: number): void;
}

tf.registerKernel({
  kernelName: KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend }) => {
    const { dy, packed } = inputs as Record<'dy' | 'packed', tf.TensorInfo>;
    const wasm = backend as unknown as WasmBackendInternals;
    const [M, N] = dy.shape;
    const K = packed.shape[1];
    const Mp = (M + 7) & ~7;
    const kernels = instantiateOnHeap(MATMUL_TRANSPOSED_WASM, backend) as unknown as Kernels;
    const dx = wasm.makeOutput([M, K], 'float32');
    const dyT = wasm.makeOutput([N, Mp], 'float32');
    const acc = wasm.makeOutput([K, Mp], 'float32');
    try {
      kernels.matmulTransposedF32(heapOffset(wasm, dy), heapOffset(wasm, packed), heapOffset(wasm, dx), M, K, N, heapOffset(wasm, dyT), heapOffset(wasm, acc));
    } finally {
      wasm.disposeData(dyT.dataId);
      wasm.disposeData(acc.dataId);
    }
    return dx;
  },
});

/**
 * dy [M, N] W^T [N, K] from W [K, N] packed by packWeights, or null where tfjs should compute
 * it instead: another backend, panels that are not f32 (bf16, q8) or that live in the matmul
 * threads' memory, K not a multiple of 4, or dy not float32. It has no gradient of its own.
 */
export function packedMatMulTransposed(dy: tf.Tensor2D, packed: PackedWeights): tf.Tensor2D | null {
  const [M, N] = dy.shape;
  if (M === 0 || dy.dtype !== 'float32' || packed.format !== 'f32' || !packed.panels || packed.inFeatures % 4 !== 0) return null;
  if (!matMulKernelAvailable()) return null;
  if (N !== packed.outFeatures) throw new Error(`packedMatMulTransposed: dy [${dy.shape}] does not fit weight [${packed.inFeatures}, ${packed.outFeatures}]`);
  return tf.engine().runKernel(KERNEL, { dy, packed: packed.panels }) as tf.Tensor2D;
}
