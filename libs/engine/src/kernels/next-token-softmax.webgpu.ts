import * as tf from '@tensorflow/tfjs-core';
import type { StorageDtype } from '../dtype';
import { weightReader } from './half-weights.wgsl';
import { addSplits } from './split-sums.webgpu';
import { InnerSplits, productShape, productStore, splitTiling, tiledProduct, tileKey } from './tiled-product.wgsl';
import { MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid } from './webgpu-program';

/**
 * The lm_head's softmax of a training step and the backward through the lm_head on webgpu.
 * tfjs's ops take about ten passes over a chunk's [n, vocabulary] logits (a max, a subtraction,
 * exp, a sum, a division, a gather, the entropy's product and sum; for the gradient a one-hot, a
 * subtraction and a product), each a dispatch, and then a product with the lm_head; these take
 * one program each way.
 *
 * `TrainyardNextTokenSoftmax` (the wasm kernel's name and outputs, next-token-softmax.ts): a
 * workgroup a row r of logits [n, V] with target t (int32): its maximum m, then exps[r][j] =
 * e^(x_j - m) and the row's stats (z_t = x_t - m, s = sum_j e^z_j, sum_j e^z_j z_j / s), the
 * threads' partial maximum and sums added in workgroup memory, in float32 (the wasm kernel sums
 * in float64), and from them the row's log p(t) = z_t - log s and entropy log s - sum_j p_j z_j.
 *
 * `TrainyardNextTokenInputGradient`: d loss / d x = dLogits W^T, the tiled product of the
 * projections (tiled-product.wgsl.ts) whose left operand, dLogits[r][j] = dLogprobs[r]
 * ([j = t] - exps[r][j] / s), is made from the softmax's outputs as it is staged, never written;
 * the vocabulary is split among workgroups, so that the widest tiles fill the GPU
 * (VOCABULARY_SPLITS), and a second dispatch adds the splits up.
 */
export const SOFTMAX_KERNEL = 'TrainyardNextTokenSoftmax';
export const INPUT_GRADIENT_KERNEL = 'TrainyardNextTokenInputGradient';

const WORKGROUP = 256;

function uniforms(n: number, V: number): MultiOutputProgram['uniforms'] {
  return [
    { type: 'uint32', value: n },
    { type: 'uint32', value: V },
  ];
}

function softmaxProgram(n: number, V: number): MultiOutputProgram {
  return {
    key: 'trainyardNextTokenSoftmax',
    wgsl: () => `${multiOutputBindings('n : u32, V : u32', ['logits', 'targets:i32'], ['exps', 'stats', 'logprobs', 'entropy'])}
var<workgroup> partial : array<f32, ${WORKGROUP}>;
var<workgroup> partialEz : array<f32, ${WORKGROUP}>;
// partial[0] (and partialEz[0] with both) from the threads' values: a maximum or sums.
fn reduce(maximum : bool, both : bool, tid : u32) {
  for (var half = ${WORKGROUP / 2}u; half > 0u; half >>= 1u) {
    if (tid < half) {
      partial[tid] = select(partial[tid] + partial[tid + half], max(partial[tid], partial[tid + half]), maximum);
      if (both) { partialEz[tid] += partialEz[tid + half]; }
    }
    workgroupBarrier();
  }
}
@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let r = wg.y * groups.x + wg.x;
  if (r >= u.n) { return; }
  let base = r * u.V;
  var m = -3.402823e+38;
  for (var j = tid; j < u.V; j += ${WORKGROUP}u) { m = max(m, logits[base + j]); }
  partial[tid] = m;
  workgroupBarrier();
  reduce(true, false, tid);
  let rowMax = partial[0];
  workgroupBarrier();
  var s = 0.0;
  var ez = 0.0;
  for (var j = tid; j < u.V; j += ${WORKGROUP}u) {
    let z = logits[base + j] - rowMax;
    let p = exp(z);
    exps[base + j] = p;
    s += p;
    // A -Infinity logit has p = 0: its z p is 0, not NaN.
    ez += select(0.0, p * z, p != 0.0);
  }
  partial[tid] = s;
  partialEz[tid] = ez;
  workgroupBarrier();
  reduce(false, true, tid);
  if (tid == 0u) {
    let zt = logits[base + u32(targets[r])] - rowMax;
    let logSum = log(partial[0]);
    let meanZ = partialEz[0] / partial[0];
    stats[3u * r] = zt;
    stats[3u * r + 1u] = partial[0];
    stats[3u * r + 2u] = meanZ;
    logprobs[r] = zt - logSum;
    entropy[r] = logSum - meanZ;
  }
}`,
    outputShapes: [[n, V], [n, 3], [n], [n]],
    dispatch: workgroupGrid(n),
    uniforms: uniforms(n, V),
  };
}

/**
 * How the head's input gradient splits the vocabulary (splitProductTiling): into up to 32 splits
 * of at least 2,048 columns, while the grid stays within 512 workgroups (two 256-thread
 * workgroups on each multiprocessor of a 132-multiprocessor card, and a few more). A chunk of
 * few positions makes few tiles of dx (55 positions of Qwen2.5-0.5B's 896 columns: 14 64-tiles),
 * each walking the whole vocabulary; split, they fill the GPU, and a chunk of many positions
 * takes wider tiles than it could unsplit.
 */
const VOCABULARY_SPLITS: InnerSplits = { target: 512, fewestInner: 2048, most: 32 };

/**
 * dx [n, C] = dLogits W^T, W the lm_head's [C, V] (f32, or held in 16 bits: weightReader), each
 * element of dLogits made as the product stages it: dLogits[r][j] = dLogprobs[r] ([j = t_r] -
 * exps[r][j] / s_r). Split (VOCABULARY_SPLITS), each split of the vocabulary writes its sums to
 * partial [splits, n, C], which addSplits adds up.
 */
function inputGradientProgram(n: number, C: number, V: number, dtype: StorageDtype): MultiOutputProgram {
  const { tiling, splits, splitDepth } = splitTiling(n, C, V, VOCABULARY_SPLITS);
  const w = weightReader('w', dtype, V);
  const out = splits === 1 ? 'dx' : 'partial';
  return {
    key: `trainyardNextTokenInputGradient_${C}_${V}_${dtype}_${tileKey(tiling.tile)}_${splits}`,
    wgsl: () => `${multiOutputBindings('M : u32', ['exps', 'stats', 'targets:i32', 'dLogprobs', w.binding], [out])}
${w.helpers}
fn dLogit(r : u32, j : u32) -> f32 {
  let g = dLogprobs[r];
  let d = exps[r * ${V}u + j] * (-g / stats[3u * r + 1u]);
  return select(d, d + g, j == u32(targets[r]));
}
fn finish(row : u32, col : u32, acc : f32) -> f32 {
  return acc;
}
${tiledProduct(V, C, tiling.tile, (row, k) => `dLogit(${row}, ${k})`, (k, c) => w.at(c, k), false, productStore(out, C, splits), null, splitDepth)}`,
    outputShapes: [productShape(splits, n, C)],
    dispatch: tiling.dispatch,
    uniforms: [{ type: 'uint32', value: n }],
  };
}

tf.registerKernel({
  kernelName: SOFTMAX_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const { logits, targets } = inputs as Record<'logits' | 'targets', tf.TensorInfo>;
    const [n, V] = logits.shape;
    return runMultiOutputProgram(backend, softmaxProgram(n, V), [logits, targets]);
  },
});

tf.registerKernel({
  kernelName: INPUT_GRADIENT_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { exps, stats, targets, dLogprobs, w } = inputs as Record<'exps' | 'stats' | 'targets' | 'dLogprobs' | 'w', tf.TensorInfo>;
    const { dtype } = attrs as unknown as { dtype: StorageDtype };
    const [n, V] = exps.shape;
    const C = w.shape[0];
    const program = inputGradientProgram(n, C, V, dtype);
    const [out] = runMultiOutputProgram(backend, program, [exps, stats, targets, dLogprobs, w]);
    return program.outputShapes[0].length === 2 ? out : addSplits(backend, out);
  },
});
