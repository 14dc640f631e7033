import * as tf from '@tensorflow/tfjs-core';
import { runProgram, WgslProgram, WORKGROUP_INDEX } from './webgpu-program';

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

function program(rows: number, C: number): WgslProgram {
  return {
    variableNames: ['x', 'weight'],
    outputShape: [rows, C],
    shaderKey: 'trainyardRmsNorm',
    dispatchLayout: { x: [0, 1] },
    dispatch: [rows, 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    uniforms: 'eps : f32,',
    getUserCode: () => `
      var<workgroup> partial : array<f32, ${WORKGROUP}>;
      fn main(index : i32) {
        let valid = ${WORKGROUP_INDEX} < uniforms.xShape[0];
        let row = min(${WORKGROUP_INDEX}, uniforms.xShape[0] - 1);
        let C = uniforms.xShape[1];
        let base = row * C;
        let tid = i32(localId.x);
        var sum = 0.0;
        for (var c = tid; c < C; c += ${WORKGROUP}) {
          let v = x[base + c];
          sum += v * v;
        }
        partial[tid] = sum;
        workgroupBarrier();
        for (var n = ${WORKGROUP / 2}; n > 0; n = n / 2) {
          if (tid < n) { partial[tid] += partial[tid + n]; }
          workgroupBarrier();
        }
        let r = inverseSqrt(partial[0] / f32(C) + uniforms.eps);
        for (var c = tid; valid && c < C; c += ${WORKGROUP}) {
          setOutputAtIndex(base + c, x[base + c] * r * weight[c]);
        }
      }`,
  };
}

tf.registerKernel({
  kernelName: RMS_NORM_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, weight } = inputs as Record<'x' | 'weight', tf.TensorInfo>;
    const { eps } = attrs as unknown as { eps: number };
    return runProgram(backend, program(x.shape[0], x.shape[1]), [x, weight], [{ type: 'float32', data: [eps] }]);
  },
});

/**
 * The backward as one dispatch, one workgroup per row like the forward: the row's sums of x^2
 * and of g x (g = dy * weight) in one pass of tree reductions, then dx = r g - x r^3 mean(g x)
 * with r = 1 / sqrt(mean(x^2) + eps), and with `residual` that gradient added (a block's
 * residual stream: one dispatch fewer). The generic ops take about a dozen dispatches.
 */
function backwardProgram(rows: number, C: number, residual: boolean): WgslProgram {
  return {
    variableNames: ['x', 'weight', 'dy', ...(residual ? ['residual'] : [])],
    outputShape: [rows, C],
    shaderKey: `trainyardRmsNormBackward_${residual}`,
    dispatchLayout: { x: [0, 1] },
    dispatch: [rows, 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    uniforms: 'eps : f32,',
    getUserCode: () => `
      var<workgroup> squares : array<f32, ${WORKGROUP}>;
      var<workgroup> products : array<f32, ${WORKGROUP}>;
      fn main(index : i32) {
        let valid = ${WORKGROUP_INDEX} < uniforms.xShape[0];
        let row = min(${WORKGROUP_INDEX}, uniforms.xShape[0] - 1);
        let C = uniforms.xShape[1];
        let base = row * C;
        let tid = i32(localId.x);
        var sq = 0.0;
        var gx = 0.0;
        for (var c = tid; c < C; c += ${WORKGROUP}) {
          let v = x[base + c];
          sq += v * v;
          gx += dy[base + c] * weight[c] * v;
        }
        squares[tid] = sq;
        products[tid] = gx;
        workgroupBarrier();
        for (var n = ${WORKGROUP / 2}; n > 0; n = n / 2) {
          if (tid < n) {
            squares[tid] += squares[tid + n];
            products[tid] += products[tid + n];
          }
          workgroupBarrier();
        }
        let r = inverseSqrt(squares[0] / f32(C) + uniforms.eps);
        let k = r * r * r * products[0] / f32(C);
        for (var c = tid; valid && c < C; c += ${WORKGROUP}) {
          setOutputAtIndex(base + c, r * dy[base + c] * weight[c] - x[base + c] * k${residual ? ' + residual[base + c]' : ''});
        }
      }`,
  };
}

tf.registerKernel({
  kernelName: RMS_NORM_BACKWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, weight, dy, residual } = inputs as Record<'x' | 'weight' | 'dy', tf.TensorInfo> & { residual?: tf.TensorInfo };
    const { eps } = attrs as unknown as { eps: number };
    return runProgram(backend, backwardProgram(x.shape[0], x.shape[1], residual !== undefined), [x, weight, dy, ...(residual ? [residual] : [])], [{ type: 'float32', data: [eps] }]);
  },
});
