import * as tf from '@tensorflow/tfjs-core';
import type { HalfDtype, StorageDtype } from '../dtype';
import { weightReader } from './half-weights.wgsl';
import { addSplits, biasEpilogue, biasFinish } from './split-sums.webgpu';
import { productShape, productSplits, productStore, rowMajor, tiledProduct, tileKey, trainingTiling } from './tiled-product.wgsl';
import { MultiOutputProgram, multiOutputBindings, runMultiOutputProgram } from './webgpu-program';

/**
 * Frozen projections' products on webgpu in the tiles of the LoRA programs
 * (tiled-product.wgsl.ts): y = x W + b, and for a training pass's backward through a
 * projection without adapters dx = dy W^T, with W [K, N] as f32 or held in 16 bits (dtype.ts's
 * halfPairs: [K, N / 2] int32, two neighbouring columns a word), as the loader holds a bf16 or
 * f16 checkpoint's projections there, each 16-bit weight unpacked to f32 as it is staged, so the
 * same weights give the sums their f32 copy gives. These are the products the encoded decoding
 * step and the LoRA programs do not make: a training step's lm_head, and projections without
 * adapters. tfjs's matMul cannot read 16-bit words, so for those they run whether or not the
 * engine's other kernels are switched on; for f32 weights the caller takes them where the
 * engine's kernels apply (fusedKernelsApply), tfjs's matMul elsewhere.
 */
export const FROZEN_LINEAR_KERNEL = 'TrainyardFrozenLinear';
export const FROZEN_LINEAR_TRANSPOSED_KERNEL = 'TrainyardFrozenLinearTransposed';

/** A weight W [K, N] as these programs take it: [K, N] f32, or held in 16 bits as pairs (model/linear.ts's HalfWeight). */
export type GpuWeight = tf.Tensor2D | { pairs: tf.Tensor2D; dtype: HalfDtype };

interface Attrs {
  dtype: StorageDtype;
  bias: boolean;
  split: boolean;
}

/** A weight's tensor, its dtype and its columns N. */
export function weightOf(weight: GpuWeight): { w: tf.Tensor2D; dtype: StorageDtype; N: number } {
  return 'pairs' in weight ? { w: weight.pairs, dtype: weight.dtype, N: 2 * weight.pairs.shape[1] } : { w: weight, dtype: 'F32', N: weight.shape[1] };
}

/** The columns N of a weight bound as `w` in `dtype`. */
const columnsOf = (w: tf.TensorInfo, dtype: StorageDtype) => (dtype === 'F32' ? w.shape[1] : 2 * w.shape[1]);

/** y [M, N] = x [M, K] W + b; split, each split's sums of x W (addSplits adds them and b). */
function linearProgram(K: number, N: number, M: number, a: Attrs): MultiOutputProgram {
  const w = weightReader('w', a.dtype, N);
  const { tiling, splits, splitDepth } = trainingTiling(M, N, K, 0, Infinity, a.split);
  const bias = a.bias && splits === 1;
  return {
    key: `trainyardFrozenLinear_${K}_${N}_${a.dtype}_${bias}_${tileKey(tiling.tile)}_${splits}`,
    wgsl: () => `${multiOutputBindings('M : u32', ['x', w.binding, ...(bias ? ['bias'] : [])], ['y'])}
${w.helpers}
${biasFinish(bias)}
${tiledProduct(K, N, tiling.tile, rowMajor('x', K), w.at, true, productStore('y', N, splits), null, splitDepth)}`,
    outputShapes: [productShape(splits, M, N)],
    dispatch: tiling.dispatch,
    uniforms: [{ type: 'uint32', value: M }],
  };
}

/** dx [M, K] = dy [M, N] W^T; split, each split's sums. */
function linearTransposedProgram(K: number, N: number, M: number, dtype: StorageDtype, split: boolean): MultiOutputProgram {
  const w = weightReader('w', dtype, N);
  const { tiling, splits, splitDepth } = trainingTiling(M, K, N, 0, Infinity, split);
  return {
    key: `trainyardFrozenLinearTransposed_${K}_${N}_${dtype}_${tileKey(tiling.tile)}_${splits}`,
    wgsl: () => `${multiOutputBindings('M : u32', ['dy', w.binding], ['dx'])}
${w.helpers}
${biasFinish(false)}
${tiledProduct(N, K, tiling.tile, rowMajor('dy', N), (n, c) => w.at(c, n), false, productStore('dx', K, splits), null, splitDepth)}`,
    outputShapes: [productShape(splits, M, K)],
    dispatch: tiling.dispatch,
    uniforms: [{ type: 'uint32', value: M }],
  };
}

tf.registerKernel({
  kernelName: FROZEN_LINEAR_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const a = attrs as unknown as Attrs;
    const { x, w, bias } = inputs as Record<string, tf.TensorInfo>;
    const [M, K] = x.shape;
    const program = linearProgram(K, columnsOf(w, a.dtype), M, a);
    const [y] = runMultiOutputProgram(backend, program, [x, w, ...(a.bias && program.outputShapes[0].length === 2 ? [bias] : [])]);
    return y.shape.length === 2 ? y : addSplits(backend, y, biasEpilogue(M, y.shape[2], a.bias ? bias : null));
  },
});

tf.registerKernel({
  kernelName: FROZEN_LINEAR_TRANSPOSED_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { dtype, split } = attrs as unknown as Attrs;
    const { dy, w } = inputs as Record<string, tf.TensorInfo>;
    const [dx] = runMultiOutputProgram(backend, linearTransposedProgram(w.shape[0], columnsOf(w, dtype), dy.shape[0], dtype, split), [dy, w]);
    return dx.shape.length === 2 ? dx : addSplits(backend, dx);
  },
});

function requireWebGpu(dtype: StorageDtype): void {
  if (tf.getBackend() !== 'webgpu') throw new Error(`the engine's frozen products of a ${dtype === 'F32' ? 'f32 weight' : 'weight held in 16 bits'} run on webgpu only, not on ${tf.getBackend()}`);
}

/**
 * x [M, K] W + b for W [K, N] (`weight`: f32, or held in 16 bits). Throws off webgpu and while a
 * gradient is recorded: the product has a gradient only as a training pass's projection
 * (ops/linear-gradient.ts, from frozenLinearTransposed), whose forward runs untaped. With
 * `split` (by default setProductSplits'), the inner dimension is split among workgroups
 * (trainingTiling) and the splits added (with b) by a second dispatch: a wider tile on a grid
 * that would leave a large GPU short of work unsplit.
 */
export function frozenLinear(x: tf.Tensor2D, weight: GpuWeight, bias: tf.Tensor1D | null, split = productSplits()): tf.Tensor2D {
  const { w, dtype, N } = weightOf(weight);
  requireWebGpu(dtype);
  if (tf.engine().isTapeOn()) throw new Error(`a ${dtype === 'F32' ? 'frozen product in the engine\'s tiles' : 'weight held in 16 bits'} has a gradient only in a training pass (enableBackward): a taped product through it has none`);
  const [M, K] = x.shape;
  if (K !== w.shape[0] || x.dtype !== 'float32') throw new Error(`frozenLinear: x [${x.shape}] ${x.dtype} does not fit a weight of ${w.shape[0]} rows`);
  if (M === 0) return tf.zeros([0, N]);
  const attrs: Attrs = { dtype, bias: bias !== null, split };
  return tf.engine().runKernel(FROZEN_LINEAR_KERNEL, { x, w, ...(bias ? { bias } : {}) }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor2D;
}

/** dy [M, N] W^T for W [K, N] (`weight`: f32, or held in 16 bits): a frozen projection's input gradient; `split` as frozenLinear's. */
export function frozenLinearTransposed(dy: tf.Tensor2D, weight: GpuWeight, split = productSplits()): tf.Tensor2D {
  const { w, dtype, N } = weightOf(weight);
  requireWebGpu(dtype);
  const [M, columns] = dy.shape;
  if (columns !== N || dy.dtype !== 'float32') throw new Error(`frozenLinearTransposed: dy [${dy.shape}] ${dy.dtype} does not fit a weight of ${N} columns`);
  if (M === 0) return tf.zeros([0, w.shape[0]]);
  return tf.engine().runKernel(FROZEN_LINEAR_TRANSPOSED_KERNEL, { dy, w }, { dtype, bias: false, split } as unknown as tf.NamedAttrMap) as tf.Tensor2D;
}
