import * as tf from '@tensorflow/tfjs-core';
import { flatMain, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid } from './webgpu-program';

/**
 * The lm_head's softmax of a training step and its gradient on webgpu: the same kernel names as
 * the wasm kernels (next-token-softmax.ts), the same outputs, in WGSL. tfjs's ops take about
 * ten passes over a chunk's [n, vocabulary] logits (a max, a subtraction, exp, a sum, a
 * division, a gather, the entropy's product and sum; for the gradient a one-hot, a subtraction
 * and a product), each a dispatch; these take two, one each way.
 *
 * `TrainyardNextTokenSoftmax`: a workgroup a row r of logits [n, V] with target t (int32): its
 * maximum m, then exps[r][j] = e^(x_j - m) and the row's stats (z_t = x_t - m, s = sum_j e^z_j,
 * sum_j e^z_j z_j / s), the threads' partial maximum and sums added in workgroup memory, in
 * float32 (the wasm kernel sums in float64). `TrainyardNextTokenGradient`: dLogits[r][j] =
 * dLogprobs[r] ([j = t] - exps[r][j] / s), a thread an element.
 */
export const SOFTMAX_KERNEL = 'TrainyardNextTokenSoftmax';
export const GRADIENT_KERNEL = 'TrainyardNextTokenGradient';

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
    wgsl: () => `${multiOutputBindings('n : u32, V : u32', ['logits', 'targets:i32'], ['exps', 'stats'])}
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
    stats[3u * r] = logits[base + u32(targets[r])] - rowMax;
    stats[3u * r + 1u] = partial[0];
    stats[3u * r + 2u] = partialEz[0] / partial[0];
  }
}`,
    outputShapes: [
      [n, V],
      [n, 3],
    ],
    dispatch: workgroupGrid(n),
    uniforms: uniforms(n, V),
  };
}

function gradientProgram(n: number, V: number): MultiOutputProgram {
  return {
    key: 'trainyardNextTokenGradient',
    wgsl: () => `${multiOutputBindings('n : u32, V : u32', ['exps', 'stats', 'targets:i32', 'dLogprobs'], ['dLogits'])}
${flatMain(WORKGROUP)}
  if (i >= u.n * u.V) { return; }
  let r = i / u.V;
  let g = dLogprobs[r];
  let d = exps[i] * (-g / stats[3u * r + 1u]);
  dLogits[i] = select(d, d + g, i % u.V == u32(targets[r]));
}`,
    outputShapes: [[n, V]],
    dispatch: workgroupGrid(Math.ceil((n * V) / WORKGROUP)),
    uniforms: uniforms(n, V),
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
  kernelName: GRADIENT_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const { exps, stats, targets, dLogprobs } = inputs as Record<'exps' | 'stats' | 'targets' | 'dLogprobs', tf.TensorInfo>;
    const [n, V] = exps.shape;
    const [dLogits] = runMultiOutputProgram(backend, gradientProgram(n, V), [exps, stats, targets, dLogprobs]);
    return dLogits;
  },
});
