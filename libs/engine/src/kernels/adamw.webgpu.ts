import * as tf from '@tensorflow/tfjs-core';
import type { AdamWStep } from './adamw';
import { disposeIntermediate, flatMain, keptPrograms, MultiOutputProgram, multiOutputBindings, runMultiOutputProgram, storageBufferLimit, workgroupGrid } from './webgpu-program';

/**
 * The optimizer's step on webgpu, where the adapters' parameters, gradients and moments already
 * are, in WGSL, as one tfjs kernel (`TrainyardAdamWStep`) that records three kinds of program in
 * order, with nothing read back between them:
 *
 * 1. The gradients' sums of squares, as many tensors a dispatch as the storage buffers hold but
 *    one, a workgroup a tensor, each into its own slot of one `sums` tensor.
 * 2. One workgroup adds them up and writes `stats` = [sum of squares, clipping scale], the scale
 *    torch's clip_grad_norm_ takes: maxGradNorm / (norm + 1e-6) where the norm is over the bound,
 *    else 1. The scale and the step's constants (its own uniforms: the learning rate, the bias
 *    corrections...) are copied into a uniform buffer of the device's that step 3's programs
 *    bind beside their own, whose uniforms are then only their parameters' sizes, the same every
 *    step: their uniform buffers and bind groups are those of the step before
 *    (webgpu-uniforms.ts, webgpu-bind-groups.ts).
 * 3. The updates, as many parameters a dispatch as the device's storage buffers hold, four each:
 *    p, its gradient and its moments m and v interleaved in one tensor ([2 n], the optimizer's
 *    own, written in place), and its next p (two parameters in WebGPU's default of eight, four
 *    where the device binds sixteen). float32 (WGSL has no float64), in the order
 *    training/adamw.ts states the update.
 *
 * The caller reads `stats` back for the norm it logs once the whole step is recorded, so the GPU
 * never waits for the host between the backward pass and the update. Without these programs a
 * step read every gradient and parameter back, updated them in a JS loop and uploaded the
 * parameters again (training/adamw.ts).
 */
export const ADAMW_STEP_KERNEL = 'TrainyardAdamWStep';

/** Parameters one update dispatch takes on the current backend: four storage buffers each. */
export function parametersADispatch(): number {
  return Math.floor(storageBufferLimit() / 4);
}

/** Gradients one sum-of-squares dispatch takes on the current backend: every storage buffer but the sums'. */
export function sumsADispatch(): number {
  return storageBufferLimit() - 1;
}

/** A step's constants, and the bound on the gradients' global norm (0: not clipped). */
export type AdamWStepAttrs = Omit<AdamWStep, 'clip'> & { maxGradNorm: number };

const WORKGROUP = 256;

/** A step's constants, by name in the update programs' uniform struct, after the clipping scale. */
const STEP_CONSTANTS = ['beta1', 'oneMinusBeta1', 'beta2', 'oneMinusBeta2', 'correction1', 'correction2', 'eps', 'lr', 'decay'];

/** The values of STEP_CONSTANTS for `step`. */
function stepConstants(step: AdamWStepAttrs): number[] {
  return [step.beta1, 1 - step.beta1, step.beta2, 1 - step.beta2, step.correction1, step.correction2, step.eps, step.learningRate, step.decay];
}

/** The update programs' uniform struct Step: the clipping scale, then the step's constants. */
const STEP_FIELDS = ['scale', ...STEP_CONSTANTS];
const STEP_BYTES = 16 * Math.ceil((4 * STEP_FIELDS.length) / 16);

/** The uniform buffer each device's update programs read the step from (step 2 fills it). */
const stepUniforms = new WeakMap<GPUDevice, GPUBuffer>();

function stepUniform(device: GPUDevice): GPUBuffer {
  let buffer = stepUniforms.get(device);
  if (!buffer) stepUniforms.set(device, (buffer = device.createBuffer({ size: STEP_BYTES, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST })));
  return buffer;
}

/** The next p, m and v of parameter j's element i from its p, g, m and v (the clipped gradient's AdamW step). */
const parameterUpdate = (j: number, i: string) => `{
    let grad = g${j}[${i}] * step.scale;
    let first = step.beta1 * mv${j}[2u * ${i}] + step.oneMinusBeta1 * grad;
    let second = step.beta2 * mv${j}[2u * ${i} + 1u] + step.oneMinusBeta2 * grad * grad;
    mv${j}[2u * ${i}] = first;
    mv${j}[2u * ${i} + 1u] = second;
    next${j}[${i}] = p${j}[${i}] * step.decay - step.lr * (first / step.correction1 / (sqrt(second / step.correction2) + step.eps));
  }`;

/**
 * Parameters of `shapes` updated in one dispatch, a thread an element of all of them in turn;
 * the step's uniform (the caller's `buffers`) bound after the outputs.
 */
function adamwProgram(shapes: number[][]): MultiOutputProgram {
  const sizes = shapes.map((shape) => tf.util.sizeFromShape(shape));
  const fields = sizes.map((_, j) => `n${j} : u32`).join(', ');
  const inputs = sizes.flatMap((_, j) => [`p${j}`, `g${j}`, `mv${j}:rw`]);
  // Parameter j's elements follow those of the parameters before it.
  let first = '0u';
  const branches = sizes.map((_, j) => {
    const branch = `if (i < ${first} + u.n${j}) ${parameterUpdate(j, `(i - (${first}))`)}`;
    first = `${first} + u.n${j}`;
    return branch;
  });
  return {
    key: `trainyardAdamW_${sizes.length}`,
    wgsl: () => `${multiOutputBindings(fields, inputs, sizes.map((_, j) => `next${j}`))}
struct Step { ${STEP_FIELDS.map((name) => `${name} : f32`).join(', ')} }
@group(0) @binding(${1 + 4 * sizes.length}) var<uniform> step : Step;
${flatMain(WORKGROUP)}
  ${branches.join(' else ')}
}`,
    outputShapes: shapes,
    dispatch: workgroupGrid(Math.ceil(sizes.reduce((a, b) => a + b, 0) / WORKGROUP)),
    uniforms: sizes.map((value) => ({ type: 'uint32' as const, value })),
  };
}

/** The squares of `sizes.length` tensors t0, t1, ... summed, a workgroup each (its threads' sums added in workgroup memory), into sums[first + k]. */
function sumOfSquaresProgram(sizes: number[], first: number): MultiOutputProgram {
  const names = sizes.map((_, i) => `t${i}`);
  const cases = names.map((t, i) => `case ${i}u: { for (var j = tid; j < u.n${i}; j += ${WORKGROUP}u) { acc += ${t}[j] * ${t}[j]; } }`).join('\n    ');
  return {
    key: `trainyardSumOfSquares_${sizes.length}`,
    wgsl: () => `${multiOutputBindings(['first : u32', ...names.map((_, i) => `n${i} : u32`)].join(', '), [...names, 'sums:rw'], [])}
var<workgroup> partial : array<f32, ${WORKGROUP}>;
@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  var acc = 0.0;
  switch wg.x {
    ${cases}
    default: {}
  }
${TREE_SUM}
  if (tid == 0u) { sums[u.first + wg.x] = partial[0]; }
}`,
    outputShapes: [],
    dispatch: [sizes.length, 1, 1],
    uniforms: [first, ...sizes].map((value) => ({ type: 'uint32' as const, value })),
  };
}

/** `acc` of every thread added up into partial[0], in workgroup memory. */
const TREE_SUM = `  partial[tid] = acc;
  workgroupBarrier();
  for (var half = ${WORKGROUP / 2}u; half > 0u; half >>= 1u) {
    if (tid < half) { partial[tid] += partial[tid + half]; }
    workgroupBarrier();
  }`;

/**
 * The `count` sums added up, and the clipping scale of their root: stats = [sum of squares,
 * scale], and values = [scale, the step's constants], what the update programs' Step holds.
 */
function clipScaleProgram(count: number, step: AdamWStepAttrs): MultiOutputProgram {
  return {
    key: 'trainyardClipScale',
    wgsl: () => `${multiOutputBindings(['count : u32', 'maxNorm : f32', ...STEP_CONSTANTS.map((name) => `${name} : f32`)].join(', '), ['sums'], ['stats', 'values'])}
var<workgroup> partial : array<f32, ${WORKGROUP}>;
@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(local_invocation_index) tid : u32) {
  var acc = 0.0;
  for (var j = tid; j < u.count; j += ${WORKGROUP}u) { acc += sums[j]; }
${TREE_SUM}
  if (tid == 0u) {
    let norm = sqrt(partial[0]);
    stats[0] = partial[0];
    // torch's clip_grad_norm_: max_norm / (total_norm + 1e-6), applied only when below 1.
    stats[1] = select(1.0, u.maxNorm / (norm + 1e-6), u.maxNorm > 0.0 && norm > u.maxNorm);
    values[0] = stats[1];
    ${STEP_CONSTANTS.map((name, k) => `values[${k + 1}] = u.${name};`).join('\n    ')}
  }
}`,
    outputShapes: [[2], [STEP_FIELDS.length]],
    dispatch: [1, 1, 1],
    uniforms: [
      { type: 'uint32', value: count },
      { type: 'float32', value: step.maxGradNorm },
      ...stepConstants(step).map((value) => ({ type: 'float32' as const, value })),
    ],
  };
}

/** The update and sum-of-squares programs made, by their parameters' sizes (the same every step). */
const programs = keptPrograms<MultiOutputProgram>();

/** What the kernel uses of tfjs-backend-webgpu's WebGPUBackend beyond runMultiOutputProgram's. */
interface Recording {
  device: GPUDevice;
  commandEncoder: GPUCommandEncoder | null;
  makeTensorInfo(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  tensorToBinding(tensor: tf.TensorInfo): GPUBufferBinding;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
}

/**
 * Inputs p0, g0, mv0, p1, ...; outputs next0, next1, ..., then stats. Everything is recorded in
 * this one synchronous call, so no other step's programs come between the copy into the device's
 * step uniform and the updates that read it.
 */
tf.registerKernel({
  kernelName: ADAMW_STEP_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const b = backend as unknown as Recording;
    const step = attrs as unknown as AdamWStepAttrs;
    const count = Object.keys(inputs).length / 3;
    const at = (name: string, j: number) => inputs[`${name}${j}`] as tf.TensorInfo;
    const grads = Array.from({ length: count }, (_, j) => at('g', j));

    // 1, 2: the sums, then their total and the scale, copied where the updates read it.
    const sums = b.makeTensorInfo([count], 'float32');
    const each = sumsADispatch();
    for (let first = 0; first < count; first += each) {
      const part = grads.slice(first, first + each);
      const sizes = part.map((g) => tf.util.sizeFromShape(g.shape));
      runMultiOutputProgram(backend, programs(`sums_${first}_${sizes}`, () => sumOfSquaresProgram(sizes, first)), [...part, sums]);
    }
    const [stats, values] = runMultiOutputProgram(backend, clipScaleProgram(count, step), [sums]);
    disposeIntermediate(backend, sums);
    const stepValues = stepUniform(b.device);
    const source = b.tensorToBinding(values);
    b.endComputePassEncoder();
    b.ensureCommandEncoderReady();
    (b.commandEncoder as GPUCommandEncoder).copyBufferToBuffer(source.buffer, source.offset ?? 0, stepValues, 0, 4 * STEP_FIELDS.length);
    disposeIntermediate(backend, values);

    // 3: the updates.
    const next: tf.TensorInfo[] = [];
    const perDispatch = parametersADispatch();
    for (let first = 0; first < count; first += perDispatch) {
      const js = Array.from({ length: Math.min(perDispatch, count - first) }, (_, k) => first + k);
      const tensors = js.flatMap((j) => [at('p', j), at('g', j), at('mv', j)]);
      const shapes = js.map((j) => at('p', j).shape);
      const update = programs(`adamw_${shapes.join(';')}`, () => adamwProgram(shapes));
      next.push(...runMultiOutputProgram(backend, update, tensors, [{ buffer: stepValues }]));
    }
    return [...next, stats];
  },
});
