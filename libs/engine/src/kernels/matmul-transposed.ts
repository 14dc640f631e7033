import * as tf from '@tensorflow/tfjs-core';
import { matMulKernelAvailable, PackedWeights } from './matmul';
import type { MatMulThreads, TransposedKernels } from './matmul-threads';
import { MATMUL_TRANSPOSED_WASM } from './matmul-transposed.wasm';
import { heapOffset, heapView, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';

/**
 * The input gradient of a frozen projection, dx [M, K] = dy [M, N] W^T, from the panels that
 * packWeights made of W [K, N] for the forward pass (source, with the why of its loops:
 * libs/engine/assembly/matmul-transposed.ts). Training then multiplies by each weight matrix
 * from one packed copy both ways, and never hands W to XNNPACK, which would pack a copy of
 * its own. A tfjs kernel for the wasm backend on tfjs's own memory, like packedMatMul; or,
 * for panels stored in the matmul threads' memory, divided between those threads by ranges of
 * k (matmul-threads.ts), with the same bits.
 */
const KERNEL = 'TrainyardPackedMatMulTransposed';
const THREADED_KERNEL = 'TrainyardThreadedMatMulTransposed';
/** The second half of a threaded input gradient begun by packedMatMulTransposedAlongside. */
const FINISH_KERNEL = 'TrainyardThreadedMatMulTransposedFinish';

interface ThreadedAttrs extends tf.NamedAttrMap {
  /** Where the panels are in the threads' memory. */
  offset: number;
  K: number;
}

/** The threads that hold the panels of the product being run (tfjs passes attributes as plain values: the owner is set here just before the call). */
let owner: MatMulThreads | null = null;

tf.registerKernel({
  kernelName: KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend }) => {
    const { dy, packed } = inputs as Record<'dy' | 'packed', tf.TensorInfo>;
    const wasm = backend as unknown as WasmBackendInternals;
    const [M, N] = dy.shape;
    const K = packed.shape[1];
    const Mp = (M + 7) & ~7;
    const kernels = instantiateOnHeap(MATMUL_TRANSPOSED_WASM, backend) as unknown as TransposedKernels;
    const dx = wasm.makeOutput([M, K], 'float32');
    const dyT = wasm.makeOutput([N, Mp], 'float32');
    const acc = wasm.makeOutput([K, Mp], 'float32');
    try {
      kernels.transposeRows(heapOffset(wasm, dy), heapOffset(wasm, dyT), M, N);
      kernels.matmulTransposedF32(heapOffset(wasm, packed), heapOffset(wasm, dx), M, K, N, heapOffset(wasm, dyT), heapOffset(wasm, acc), 0, K);
    } finally {
      wasm.disposeData(dyT.dataId);
      wasm.disposeData(acc.dataId);
    }
    return dx;
  },
});

tf.registerKernel({
  kernelName: THREADED_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { dy } = inputs as Record<'dy', tf.TensorInfo>;
    const { offset, K } = attrs as ThreadedAttrs;
    const wasm = backend as unknown as WasmBackendInternals;
    const [M, N] = dy.shape;
    const dx = wasm.makeOutput([M, K], 'float32');
    (owner as MatMulThreads).runTransposed({ dy: heapView(wasm, dy), packed: offset, dx: heapView(wasm, dx), M, K, N });
    return dx;
  },
});

tf.registerKernel({
  kernelName: FINISH_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ backend, attrs }) => {
    const { M, K } = attrs as { M: number; K: number };
    const wasm = backend as unknown as WasmBackendInternals;
    const dx = wasm.makeOutput([M, K], 'float32');
    (owner as MatMulThreads).finishTransposed(heapView(wasm, dx));
    return dx;
  },
});

/**
 * dy [M, N] W^T [N, K] from W [K, N] packed by packWeights, or null where tfjs should compute
 * it instead: another backend, panels that are not f32 (bf16, q8) or are in pairs, K not a multiple of 4, or
 * dy not float32. Panels in the matmul threads' memory are multiplied there, divided between
 * the threads. It has no gradient of its own.
 */
export function packedMatMulTransposed(dy: tf.Tensor2D, packed: PackedWeights): tf.Tensor2D | null {
  if (!transposedKernelApplies(dy, packed)) return null;
  const threaded = packed.threaded;
  if (threaded) {
    const attrs: ThreadedAttrs = { offset: threaded.offset, K: packed.inFeatures };
    return onThreads(threaded.threads, () => tf.engine().runKernel(THREADED_KERNEL, { dy }, attrs) as tf.Tensor2D);
  }
  return tf.engine().runKernel(KERNEL, { dy, packed: packed.panels as tf.Tensor3D }) as tf.Tensor2D;
}

/**
 * packedMatMulTransposed(dy, packed) and `meanwhile()`, together: where the panels are in the
 * matmul threads' memory, the helpers start on the product, this thread runs `meanwhile`
 * (tfjs work of its own that needs no matmul thread, such as the LoRA kernels), then takes its
 * share of the chunks left. Elsewhere one after the other. dx is the same bits either way;
 * null where packedMatMulTransposed would give null.
 */
export function packedMatMulTransposedAlongside<T>(dy: tf.Tensor2D, packed: PackedWeights, meanwhile: () => T): { dx: tf.Tensor2D; result: T } | null {
  const threaded = packed.threaded;
  if (!threaded) {
    const dx = packedMatMulTransposed(dy, packed);
    return dx && { dx, result: meanwhile() };
  }
  if (!transposedKernelApplies(dy, packed)) return null;
  const [M, N] = dy.shape;
  const K = packed.inFeatures;
  const wasm = tf.backend() as unknown as WasmBackendInternals;
  threaded.threads.beginTransposed({ dy: heapView(wasm, dy), packed: threaded.offset, M, K, N });
  let result: T;
  try {
    result = meanwhile();
  } catch (err) {
    threaded.threads.finishTransposed(new Float32Array(M * K));
    throw err;
  }
  return { dx: onThreads(threaded.threads, () => tf.engine().runKernel(FINISH_KERNEL, {}, { M, K }) as tf.Tensor2D), result };
}

/** Whether the kernel takes dy over these panels (see packedMatMulTransposed); throws where dy does not fit them. */
export function transposedKernelApplies(dy: tf.Tensor2D, packed: PackedWeights): boolean {
  const [M, N] = dy.shape;
  if (M === 0 || dy.dtype !== 'float32' || packed.format !== 'f32' || packed.paired || packed.inFeatures % 4 !== 0) return false;
  if (!matMulKernelAvailable()) return false;
  if (N !== packed.outFeatures) throw new Error(`packedMatMulTransposed: dy [${dy.shape}] does not fit weight [${packed.inFeatures}, ${packed.outFeatures}]`);
  return true;
}

/** runKernel's call of a threaded kernel, with `owner` set to the threads that hold the panels for it. */
function onThreads(threads: MatMulThreads, call: () => tf.Tensor2D): tf.Tensor2D {
  owner = threads;
  try {
    return call();
  } finally {
    owner = null;
  }
}
