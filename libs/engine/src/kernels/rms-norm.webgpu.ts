import * as tf from '@tensorflow/tfjs-core';
import { ProgramUniform, runProgram, WgslProgram, WORKGROUP_INDEX } from './webgpu-program';

/**
 * RMSNorm, x * rsqrt(mean(x^2) + eps) * weight over the last axis of [rows, C], as one WGSL
 * dispatch on webgpu: one workgroup per row sums the squares (a tree reduction in workgroup
 * memory) and writes the scaled row. Dispatched by rms-norm.ts, which registers the same kernel
 * name for wasm. The generic ops take five dispatches (square, mean, add,
 * rsqrt, two muls) and two intermediate tensors per norm, two norms per layer.
 */
export const RMS_NORM_KERNEL = 'TrainyardRmsNorm';
/** Its gradient with respect to x, dx = r g - x r^3 mean(g x) with g = dy * weight (ops/norm.ts, rmsNormBackward), plus a residual gradient where one is given. */
export const RMS_NORM_BACKWARD_KERNEL = 'TrainyardRmsNormBackward';
const WORKGROUP = 64;

/**
 * What the forward and backward programs share: one workgroup of WORKGROUP threads per row of
 * x [rows, C], out [rows, C], eps a uniform. `main` opens with the row's setup: `row` (a
 * workgroup past the last row, WORKGROUP_INDEX, is clamped to it with `valid` false, so that it
 * passes the barriers and writes nothing), `C`, the row's first element `base` and the thread
 * `tid`. `arrays` are workgroup arrays of one float a thread, for the row's sums; `body` is the
 * rest of `main`.
 */
function rowProgram(shaderKey: string, variableNames: string[], rows: number, C: number, arrays: string[], body: () => string): WgslProgram {
  return {
    variableNames,
    outputShape: [rows, C],
    shaderKey,
    dispatchLayout: { x: [0, 1] },
    dispatch: [rows, 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    uniforms: 'eps : f32,',
    getUserCode: () => `
      ${arrays.map((name) => `var<workgroup> ${name} : array<f32, ${WORKGROUP}>;`).join('\n      ')}
      fn main(index : i32) {
        let valid = ${WORKGROUP_INDEX} < uniforms.xShape[0];
        let row = min(${WORKGROUP_INDEX}, uniforms.xShape[0] - 1);
        let C = uniforms.xShape[1];
        let base = row * C;
        let tid = i32(localId.x);
${body()}
      }`,
  };
}

/** Sums each workgroup array of `arrays` (one float a thread) into its element 0: a tree reduction, a barrier a level. */
function workgroupSums(arrays: string[]): string {
  return `        for (var n = ${WORKGROUP / 2}; n > 0; n = n / 2) {
          if (tid < n) {
${arrays.map((name) => `            ${name}[tid] += ${name}[tid + n];`).join('\n')}
          }
          workgroupBarrier();
        }`;
}

/** Writes element c of the row, `value`, for each of the thread's c; nothing from a workgroup past the last row. */
function writeRow(value: string): string {
  return `        for (var c = tid; valid && c < C; c += ${WORKGROUP}) {
          setOutputAtIndex(base + c, ${value});
        }`;
}

/** The forward: each thread sums the squares of its elements, the workgroup sums those, and every thread writes its elements scaled by r. */
function program(rows: number, C: number): WgslProgram {
  return rowProgram('trainyardRmsNorm', ['x', 'weight'], rows, C, ['partial'], () => `        var sum = 0.0;
        for (var c = tid; c < C; c += ${WORKGROUP}) {
          let v = x[base + c];
          sum += v * v;
        }
        partial[tid] = sum;
        workgroupBarrier();
${workgroupSums(['partial'])}
        let r = inverseSqrt(partial[0] / f32(C) + uniforms.eps);
${writeRow('x[base + c] * r * weight[c]')}`);
}

/** The uniforms of a call: eps. */
function epsUniform(attrs: tf.NamedAttrMap | undefined): ProgramUniform[] {
  return [{ type: 'float32', data: [(attrs as unknown as { eps: number }).eps] }];
}

tf.registerKernel({
  kernelName: RMS_NORM_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, weight } = inputs as Record<'x' | 'weight', tf.TensorInfo>;
    return runProgram(backend, program(x.shape[0], x.shape[1]), [x, weight], epsUniform(attrs));
  },
});

/**
 * The backward as one dispatch, one workgroup per row like the forward: the row's sums of x^2
 * and of g x (g = dy * weight) in one pass of tree reductions, then dx = r g - x r^3 mean(g x)
 * with r = 1 / sqrt(mean(x^2) + eps), and with `residual` that gradient added (a block's
 * residual stream: one dispatch fewer). The generic ops take about a dozen dispatches.
 */
function backwardProgram(rows: number, C: number, residual: boolean): WgslProgram {
  const variableNames = ['x', 'weight', 'dy', ...(residual ? ['residual'] : [])];
  return rowProgram(`trainyardRmsNormBackward_${residual}`, variableNames, rows, C, ['squares', 'products'], () => `        var sq = 0.0;
        var gx = 0.0;
        for (var c = tid; c < C; c += ${WORKGROUP}) {
          let v = x[base + c];
          sq += v * v;
          gx += dy[base + c] * weight[c] * v;
        }
        squares[tid] = sq;
        products[tid] = gx;
        workgroupBarrier();
${workgroupSums(['squares', 'products'])}
        let r = inverseSqrt(squares[0] / f32(C) + uniforms.eps);
        let k = r * r * r * products[0] / f32(C);
${writeRow(`r * dy[base + c] * weight[c] - x[base + c] * k${residual ? ' + residual[base + c]' : ''}`)}`);
}

tf.registerKernel({
  kernelName: RMS_NORM_BACKWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, weight, dy, residual } = inputs as Record<'x' | 'weight' | 'dy', tf.TensorInfo> & { residual?: tf.TensorInfo };
    return runProgram(backend, backwardProgram(x.shape[0], x.shape[1], residual !== undefined), [x, weight, dy, ...(residual ? [residual] : [])], epsUniform(attrs));
  },
});
