import * as tf from '@tensorflow/tfjs-core';
import { disposeIntermediate, flatMain, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid } from './webgpu-program';

/**
 * The second dispatch of a tiled product split along its inner dimension (tiled-product.wgsl.ts's
 * splitDepth and productStore): each split wrote its sums to its slice of partial [splits, M, N];
 * this adds them up, a thread an element, with the product's bias where it has one (which a
 * split's epilogue cannot add, or it would be added once a split).
 */
const WORKGROUP = 256;

/** out [M, N] = sum over s of partial [s, M, N] (+ bias [N]). */
function splitSumsProgram(splits: number, M: number, N: number, bias: boolean): MultiOutputProgram {
  return {
    key: `trainyardSplitSums_${splits}_${bias ? N : 'none'}`,
    wgsl: () => `${multiOutputBindings('size : u32', ['partial', ...(bias ? ['bias'] : [])], ['out'])}
${flatMain(WORKGROUP)}
  if (i >= u.size) { return; }
  var sum = ${bias ? `bias[i % ${N}u]` : '0.0'};
  for (var s = 0u; s < ${splits}u; s++) { sum += partial[s * u.size + i]; }
  out[i] = sum;
}`,
    outputShapes: [[M, N]],
    dispatch: workgroupGrid(Math.ceil((M * N) / WORKGROUP)),
    uniforms: [{ type: 'uint32', value: M * N }],
  };
}

/** The product [M, N] from `partial` [splits, M, N] (a kernelFunc's own intermediate, freed here), plus `bias` [N] if given. */
export function addSplits(backend: object, partial: tf.TensorInfo, bias: tf.TensorInfo | null = null): tf.TensorInfo {
  const [splits, M, N] = partial.shape;
  const [out] = runMultiOutputProgram(backend, splitSumsProgram(splits, M, N, bias !== null), bias ? [partial, bias] : [partial]);
  disposeIntermediate(backend, partial);
  return out;
}
