import * as tf from '@tensorflow/tfjs-core';
import type { HalfDtype } from '../dtype';
import { weightReader } from './half-weights.wgsl';
import { productTiling, rowMajor, tiledProduct } from './tiled-product.wgsl';
import { MultiOutputProgram, multiOutputBindings, runMultiOutputProgram } from './webgpu-program';

/**
 * Products on webgpu with a weight W [K, N] held in 16 bits (dtype.ts's halfPairs: [K, N / 2]
 * int32, two neighbouring columns a word), as the loader holds a bf16 or f16 checkpoint's
 * projections there: y = x W + b, and for a training pass's backward through a projection
 * without adapters dx = dy W^T. Both are the tiled product of the LoRA programs
 * (tiled-product.wgsl.ts), each weight unpacked to f32 as it is staged, so the same weights give
 * the sums their f32 copy gives. These are the products the encoded decoding step and the LoRA
 * programs do not make (they read the same words themselves): tfjs's matMul cannot read 16-bit
 * words, so they run whether or not the engine's other kernels are switched on.
 */
export const HALF_LINEAR_KERNEL = 'TrainyardHalfLinear';
export const HALF_LINEAR_TRANSPOSED_KERNEL = 'TrainyardHalfLinearTransposed';

interface Attrs {
  dtype: HalfDtype;
  bias: boolean;
}

/** y [M, N] = x [M, K] W + b. */
function halfLinearProgram(K: number, N: number, M: number, a: Attrs): MultiOutputProgram {
  const w = weightReader('w', a.dtype, N);
  const { tile, dispatch } = productTiling(M, N);
  return {
    key: `trainyardHalfLinear_${K}_${N}_${a.dtype}_${a.bias}_${tile}`,
    wgsl: () => `${multiOutputBindings('M : u32', ['x', w.binding, ...(a.bias ? ['bias'] : [])], ['y'])}
${w.helpers}
fn finish(row : u32, col : u32, acc : f32) -> f32 {
  return acc${a.bias ? ' + bias[col]' : ''};
}
${tiledProduct(K, N, tile, rowMajor('x', K), w.at, true, (row, col, value) => `y[${row} * ${N}u + ${col}] = ${value};`)}`,
    outputShapes: [[M, N]],
    dispatch,
    uniforms: [{ type: 'uint32', value: M }],
  };
}

/** dx [M, K] = dy [M, N] W^T. */
function halfLinearTransposedProgram(K: number, N: number, M: number, dtype: HalfDtype): MultiOutputProgram {
  const w = weightReader('w', dtype, N);
  const { tile, dispatch } = productTiling(M, K);
  return {
    key: `trainyardHalfLinearTransposed_${K}_${N}_${dtype}_${tile}`,
    wgsl: () => `${multiOutputBindings('M : u32', ['dy', w.binding], ['dx'])}
${w.helpers}
fn finish(row : u32, col : u32, acc : f32) -> f32 {
  return acc;
}
${tiledProduct(N, K, tile, rowMajor('dy', N), (n, c) => w.at(c, n), false, (row, col, value) => `dx[${row} * ${K}u + ${col}] = ${value};`)}`,
    outputShapes: [[M, K]],
    dispatch,
    uniforms: [{ type: 'uint32', value: M }],
  };
}

tf.registerKernel({
  kernelName: HALF_LINEAR_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const a = attrs as unknown as Attrs;
    const { x, w, bias } = inputs as Record<string, tf.TensorInfo>;
    const [M, K] = x.shape;
    const [y] = runMultiOutputProgram(backend, halfLinearProgram(K, 2 * w.shape[1], M, a), [x, w, ...(a.bias ? [bias] : [])]);
    return y;
  },
});

tf.registerKernel({
  kernelName: HALF_LINEAR_TRANSPOSED_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { dtype } = attrs as unknown as Attrs;
    const { dy, w } = inputs as Record<string, tf.TensorInfo>;
    const [dx] = runMultiOutputProgram(backend, halfLinearTransposedProgram(w.shape[0], 2 * w.shape[1], dy.shape[0], dtype), [dy, w]);
    return dx;
  },
});

function requireWebGpu(): void {
  if (tf.getBackend() !== 'webgpu') throw new Error(`a weight held in 16 bits multiplies on webgpu only, not on ${tf.getBackend()}`);
}

/**
 * x [M, K] W + b for W [K, N] held as `pairs` ([K, N / 2] int32) in `dtype`. Throws off webgpu
 * and while a gradient is recorded: the product has a gradient only as a training pass's
 * projection (ops/linear-gradient.ts, from halfLinearTransposed), whose forward runs untaped.
 */
export function halfLinear(x: tf.Tensor2D, pairs: tf.Tensor2D, dtype: HalfDtype, bias: tf.Tensor1D | null): tf.Tensor2D {
  requireWebGpu();
  if (tf.engine().isTapeOn()) throw new Error('a weight held in 16 bits has a gradient only in a training pass (enableBackward): a taped product through it has none');
  const [M, K] = x.shape;
  if (K !== pairs.shape[0] || x.dtype !== 'float32') throw new Error(`halfLinear: x [${x.shape}] ${x.dtype} does not fit a weight of ${pairs.shape[0]} rows`);
  if (M === 0) return tf.zeros([0, 2 * pairs.shape[1]]);
  const attrs: Attrs = { dtype, bias: bias !== null };
  return tf.engine().runKernel(HALF_LINEAR_KERNEL, { x, w: pairs, ...(bias ? { bias } : {}) }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor2D;
}

/** dy [M, N] W^T for W [K, N] held as `pairs` in `dtype`: a frozen projection's input gradient. */
export function halfLinearTransposed(dy: tf.Tensor2D, pairs: tf.Tensor2D, dtype: HalfDtype): tf.Tensor2D {
  requireWebGpu();
  const [M, N] = dy.shape;
  if (N !== 2 * pairs.shape[1] || dy.dtype !== 'float32') throw new Error(`halfLinearTransposed: dy [${dy.shape}] ${dy.dtype} does not fit a weight of ${2 * pairs.shape[1]} columns`);
  if (M === 0) return tf.zeros([0, pairs.shape[0]]);
  return tf.engine().runKernel(HALF_LINEAR_TRANSPOSED_KERNEL, { dy, w: pairs }, { dtype, bias: false } as unknown as tf.NamedAttrMap) as tf.Tensor2D;
}
