import * as tf from '@tensorflow/tfjs-core';
import type { AdamWStep } from './adamw';
import { flatMain, MAX_STORAGE_BUFFERS, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, workgroupGrid } from './webgpu-program';

/**
 * The optimizer's step on webgpu, where the adapters' parameters, gradients and moments already
 * are: the same kernel names as the wasm kernels (adamw.ts), in WGSL. Without them a step read
 * every gradient and parameter back, updated them in a JS loop and uploaded the parameters
 * again (training/adamw.ts), a few hundred tensors a step for a LoRA adapter.
 *
 * `TrainyardAdamW` is one elementwise dispatch a parameter: p, g, m and v in, the next p, m and v
 * out, in float32 (WGSL has no float64) in the order training/adamw.ts states the update.
 * `TrainyardSumOfSquares` sums the squares of up to seven tensors, a workgroup a tensor, into
 * one float each: the global gradient norm reads back those, not the gradients.
 */
export const ADAMW_KERNEL = 'TrainyardAdamW';
export const SUM_OF_SQUARES_KERNEL = 'TrainyardSumOfSquares';

/** Tensors one TrainyardSumOfSquares dispatch takes: every storage buffer but its output's. */
export const SUMS_A_DISPATCH = MAX_STORAGE_BUFFERS - 1;

const WORKGROUP = 256;

function adamwProgram(shape: number[], step: AdamWStep): MultiOutputProgram {
  const n = tf.util.sizeFromShape(shape);
  const constants: [string, number][] = [
    ['clip', step.clip],
    ['beta1', step.beta1],
    ['oneMinusBeta1', 1 - step.beta1],
    ['beta2', step.beta2],
    ['oneMinusBeta2', 1 - step.beta2],
    ['correction1', step.correction1],
    ['correction2', step.correction2],
    ['eps', step.eps],
    ['lr', step.learningRate],
    ['decay', step.decay],
  ];
  return {
    key: 'trainyardAdamW',
    wgsl: () => `${multiOutputBindings(['n : u32', ...constants.map(([name]) => `${name} : f32`)].join(', '), ['p', 'g', 'm', 'v'], ['pOut', 'mOut', 'vOut'])}
${flatMain(WORKGROUP)}
  if (i >= u.n) { return; }
  let grad = g[i] * u.clip;
  let first = u.beta1 * m[i] + u.oneMinusBeta1 * grad;
  let second = u.beta2 * v[i] + u.oneMinusBeta2 * grad * grad;
  mOut[i] = first;
  vOut[i] = second;
  pOut[i] = p[i] * u.decay - u.lr * (first / u.correction1 / (sqrt(second / u.correction2) + u.eps));
}`,
    outputShapes: [shape, shape, shape],
    dispatch: workgroupGrid(Math.ceil(n / WORKGROUP)),
    uniforms: [{ type: 'uint32', value: n }, ...constants.map(([, value]) => ({ type: 'float32' as const, value }))],
  };
}

/** The squares of `sizes.length` tensors t0, t1, ... summed, a workgroup each (its threads' sums added in workgroup memory). */
function sumOfSquaresProgram(sizes: number[]): MultiOutputProgram {
  const names = sizes.map((_, i) => `t${i}`);
  const cases = names.map((t, i) => `case ${i}u: { for (var j = tid; j < u.n${i}; j += ${WORKGROUP}u) { acc += ${t}[j] * ${t}[j]; } }`).join('\n    ');
  return {
    key: `trainyardSumOfSquares_${sizes.length}`,
    wgsl: () => `${multiOutputBindings(names.map((_, i) => `n${i} : u32`).join(', '), names, ['sums'])}
var<workgroup> partial : array<f32, ${WORKGROUP}>;
@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  var acc = 0.0;
  switch wg.x {
    ${cases}
    default: {}
  }
  partial[tid] = acc;
  workgroupBarrier();
  for (var half = ${WORKGROUP / 2}u; half > 0u; half >>= 1u) {
    if (tid < half) { partial[tid] += partial[tid + half]; }
    workgroupBarrier();
  }
  if (tid == 0u) { sums[wg.x] = partial[0]; }
}`,
    outputShapes: [[sizes.length]],
    dispatch: [sizes.length, 1, 1],
    uniforms: sizes.map((value) => ({ type: 'uint32' as const, value })),
  };
}

tf.registerKernel({
  kernelName: ADAMW_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { p, g, m, v } = inputs as Record<'p' | 'g' | 'm' | 'v', tf.TensorInfo>;
    return runMultiOutputProgram(backend, adamwProgram(p.shape, attrs as unknown as AdamWStep), [p, g, m, v]);
  },
});

tf.registerKernel({
  kernelName: SUM_OF_SQUARES_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const tensors = Object.keys(inputs)
      .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)))
      .map((name) => inputs[name] as tf.TensorInfo);
    const [sums] = runMultiOutputProgram(backend, sumOfSquaresProgram(tensors.map((t) => tf.util.sizeFromShape(t.shape))), tensors);
    return sums;
  },
});
