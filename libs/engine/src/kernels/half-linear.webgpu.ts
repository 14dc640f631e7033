import * as tf from '@tensorflow/tfjs-core';
import type { HalfDtype } from '../dtype';
import { halfPairWgsl } from './half-weights.wgsl';
import { TILE, tiledProduct } from './tiled-product.wgsl';
import { MultiOutputProgram, multiOutputBindings, runMultiOutputProgram } from './webgpu-program';

/**
 * y = x W + b on webgpu for a weight W [K, N] held in 16 bits (dtype.ts's halfPairs: [K, N / 2]
 * int32, two neighbouring columns a word), as an inference-only process on webgpu holds a
 * bf16 or f16 checkpoint's projections (loader.ts): the tiled product of the training programs
 * (tiled-product.wgsl.ts), each weight unpacked to f32 as it is staged, the bias added in its
 * epilogue. This is the product of every forward pass the encoded decoding step does not run
 * (decode-step.webgpu.ts reads the same words itself): tfjs's matMul cannot read 16-bit words,
 * so it runs whether or not the engine's other kernels are switched on.
 */
export const HALF_LINEAR_KERNEL = 'TrainyardHalfLinear';

interface Attrs {
  dtype: HalfDtype;
  bias: boolean;
}

function halfLinearProgram(K: number, N: number, M: number, a: Attrs): MultiOutputProgram {
  return {
    key: `trainyardHalfLinear_${K}_${N}_${a.dtype}_${a.bias}`,
    wgsl: () => `${multiOutputBindings('M : u32', ['x', 'w:u32', ...(a.bias ? ['bias'] : [])], ['y'])}
${halfPairWgsl(a.dtype)}
/** W's element (k, c): one half of the word holding columns c and c ^ 1. */
fn weightAt(k : u32, c : u32) -> f32 {
  let pair = halfPair(w[k * ${N / 2}u + c / 2u]);
  return select(pair.x, pair.y, (c & 1u) == 1u);
}
fn finish(row : u32, col : u32, acc : f32) -> f32 {
  return acc${a.bias ? ' + bias[col]' : ''};
}
${tiledProduct(K, N, 'x', (k, c) => `weightAt(${k}, ${c})`, true, (row, col, value) => `y[${row} * ${N}u + ${col}] = ${value};`)}`,
    outputShapes: [[M, N]],
    dispatch: [Math.ceil(N / TILE), Math.ceil(M / TILE), 1],
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

/**
 * x [M, K] W + b for W [K, N] held as `pairs` ([K, N / 2] int32) in `dtype`. Throws off webgpu
 * and while a gradient is recorded: such a weight has no gradient route (a process that trains
 * loads its model without inferenceOnly, and holds f32 weights).
 */
export function halfLinear(x: tf.Tensor2D, pairs: tf.Tensor2D, dtype: HalfDtype, bias: tf.Tensor1D | null): tf.Tensor2D {
  if (tf.getBackend() !== 'webgpu') throw new Error(`a weight held in 16 bits multiplies on webgpu only, not on ${tf.getBackend()}`);
  if (tf.engine().isTapeOn()) throw new Error('a weight held in 16 bits has no gradient: load the model without inferenceOnly to train through it');
  const [M, K] = x.shape;
  if (K !== pairs.shape[0] || x.dtype !== 'float32') throw new Error(`halfLinear: x [${x.shape}] ${x.dtype} does not fit a weight of ${pairs.shape[0]} rows`);
  if (M === 0) return tf.zeros([0, 2 * pairs.shape[1]]);
  const attrs: Attrs = { dtype, bias: bias !== null };
  return tf.engine().runKernel(HALF_LINEAR_KERNEL, { x, w: pairs, ...(bias ? { bias } : {}) }, attrs as unknown as tf.NamedAttrMap) as tf.Tensor2D;
}
