import * as tf from '@tensorflow/tfjs-core';
import type { AdamWStep } from './adamw';
import { flatMain, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, storageBufferLimit, workgroupGrid } from './webgpu-program';

/**
 * The optimizer's step on webgpu, where the adapters' parameters, gradients and moments already
 * are, in WGSL. Without it a step read every gradient and parameter back, updated them in a JS
 * loop and uploaded the parameters again (training/adamw.ts), a few hundred tensors a step for a
 * LoRA adapter.
 *
 * `TrainyardAdamWInPlace` updates as many parameters a dispatch as the device's storage buffers
 * hold, four each: p, its gradient and its moments m and v interleaved in one tensor ([2 n], the
 * optimizer's own, written in place), and its next p (two parameters in WebGPU's default of
 * eight, four where the device binds sixteen; the wasm kernel's separate m and v in and out
 * would take seven, one parameter a dispatch). float32 (WGSL has no float64), in the order
 * training/adamw.ts states the update. `TrainyardSumOfSquares` sums the squares of as many
 * tensors as the storage buffers hold but its output's, a workgroup a tensor, into one float
 * each: the global gradient norm reads back those, not the gradients.
 */
export const ADAMW_IN_PLACE_KERNEL = 'TrainyardAdamWInPlace';
export const SUM_OF_SQUARES_KERNEL = 'TrainyardSumOfSquares';

/** Parameters one TrainyardAdamWInPlace dispatch updates on the current backend: four storage buffers each. */
export function parametersADispatch(): number {
  return Math.floor(storageBufferLimit() / 4);
}

/** Tensors one TrainyardSumOfSquares dispatch takes on the current backend: every storage buffer but its output's. */
export function sumsADispatch(): number {
  return storageBufferLimit() - 1;
}

const WORKGROUP = 256;

/** The next p, m and v of parameter j's element i from its p, g, m and v (the clipped gradient's AdamW step). */
const parameterUpdate = (j: number, i: string) => `{
    let grad = g${j}[${i}] * u.clip;
    let first = u.beta1 * mv${j}[2u * ${i}] + u.oneMinusBeta1 * grad;
    let second = u.beta2 * mv${j}[2u * ${i} + 1u] + u.oneMinusBeta2 * grad * grad;
    mv${j}[2u * ${i}] = first;
    mv${j}[2u * ${i} + 1u] = second;
    next${j}[${i}] = p${j}[${i}] * u.decay - u.lr * (first / u.correction1 / (sqrt(second / u.correction2) + u.eps));
  }`;

/** Parameters of `shapes` updated in one dispatch, a thread an element of all of them in turn. */
function adamwProgram(shapes: number[][], step: AdamWStep): MultiOutputProgram {
  const sizes = shapes.map((shape) => tf.util.sizeFromShape(shape));
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
  const fields = [...sizes.map((_, j) => `n${j} : u32`), ...constants.map(([name]) => `${name} : f32`)].join(', ');
  const inputs = sizes.flatMap((_, j) => [`p${j}`, `g${j}`, `mv${j}:rw`]);
  // Parameter j's elements follow those of the parameters before it.
  let first = '0u';
  const branches = sizes.map((_, j) => {
    const branch = `if (i < ${first} + u.n${j}) ${parameterUpdate(j, `(i - (${first}))`)}`;
    first = `${first} + u.n${j}`;
    return branch;
  });
  return {
    key: `trainyardAdamWInPlace_${sizes.length}`,
    wgsl: () => `${multiOutputBindings(fields, inputs, sizes.map((_, j) => `next${j}`))}
${flatMain(WORKGROUP)}
  ${branches.join(' else ')}
}`,
    outputShapes: shapes,
    dispatch: workgroupGrid(Math.ceil(sizes.reduce((a, b) => a + b, 0) / WORKGROUP)),
    uniforms: [...sizes.map((value) => ({ type: 'uint32' as const, value })), ...constants.map(([, value]) => ({ type: 'float32' as const, value }))],
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
  kernelName: ADAMW_IN_PLACE_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const count = Object.keys(inputs).length / 3;
    const tensors = Array.from({ length: count }, (_, j) => ['p', 'g', 'mv'].map((name) => inputs[`${name}${j}`] as tf.TensorInfo)).flat();
    return runMultiOutputProgram(backend, adamwProgram(Array.from({ length: count }, (_, j) => tensors[3 * j].shape), attrs as unknown as AdamWStep), tensors);
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
