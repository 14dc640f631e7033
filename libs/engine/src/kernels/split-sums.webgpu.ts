import * as tf from '@tensorflow/tfjs-core';
import { productStore } from './tiled-product.wgsl';
import { disposeIntermediate, flatMain, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid } from './webgpu-program';

/**
 * The second dispatch of a tiled product split along its inner dimension (tiled-product.wgsl.ts's
 * splitDepth and productStore): each split wrote its sums to its slice of partial [splits, M, N];
 * this adds them up, a thread an element, and runs the product's epilogue on the total (a bias,
 * the adapters' part of a LoRA projection), which a split's own epilogue cannot, or it would be
 * added once a split.
 */
const WORKGROUP = 256;

/**
 * What the program does with an element's total: `wgsl` defines `fn finish(row : u32, col : u32,
 * acc : f32) -> f32` as the unsplit product's epilogue does (over `inputs`, bound after partial,
 * from `tensors`), and `store` writes its value into `output` [shape] (as tiledProduct's store:
 * `row` and `col` of the product's [M, N]). `key` names it among epilogues of the same sizes.
 */
export interface SplitsEpilogue {
  key: string;
  inputs: string[];
  tensors: tf.TensorInfo[];
  wgsl: string;
  output: string;
  shape: number[];
  store: (row: string, col: string, value: string) => string;
}

/** A frozen product's `finish`: the sum as it is, or with the binding `bias` [N] added. */
export function biasFinish(bias: boolean): string {
  return `fn finish(row : u32, col : u32, acc : f32) -> f32 {
  return acc${bias ? ' + bias[col]' : ''};
}`;
}

/** The epilogue of a frozen product: the total as it is, plus `bias` [N] if given, into out [M, N]. */
export function biasEpilogue(M: number, N: number, bias: tf.TensorInfo | null): SplitsEpilogue {
  return {
    key: bias ? 'bias' : 'none',
    inputs: bias ? ['bias'] : [],
    tensors: bias ? [bias] : [],
    wgsl: biasFinish(bias !== null),
    output: 'out',
    shape: [M, N],
    store: productStore('out', N, 1),
  };
}

/** The epilogue's output from the sum over s of partial [s, M, N]. */
function splitSumsProgram(splits: number, M: number, N: number, epilogue: SplitsEpilogue): MultiOutputProgram {
  return {
    key: `trainyardSplitSums_${splits}_${N}_${epilogue.key}`,
    wgsl: () => `${multiOutputBindings('M : u32', ['partial', ...epilogue.inputs], [epilogue.output])}
${epilogue.wgsl}
${flatMain(WORKGROUP)}
  let size = u.M * ${N}u;
  if (i >= size) { return; }
  var sum = 0.0;
  for (var s = 0u; s < ${splits}u; s++) { sum += partial[s * size + i]; }
  let row = i / ${N}u;
  let col = i % ${N}u;
  ${epilogue.store('row', 'col', 'finish(row, col, sum)')}
}`,
    outputShapes: [epilogue.shape],
    dispatch: workgroupGrid(Math.ceil((M * N) / WORKGROUP)),
    uniforms: [{ type: 'uint32', value: M }],
  };
}

/**
 * The product from `partial` [splits, M, N] (a kernelFunc's own intermediate, freed here): the
 * splits' sums added and put through `epilogue`, by default added up alone into [M, N].
 */
export function addSplits(backend: object, partial: tf.TensorInfo, epilogue?: SplitsEpilogue): tf.TensorInfo {
  const [splits, M, N] = partial.shape;
  const e = epilogue ?? biasEpilogue(M, N, null);
  const [out] = runMultiOutputProgram(backend, splitSumsProgram(splits, M, N, e), [partial, ...e.tensors]);
  disposeIntermediate(backend, partial);
  return out;
}
