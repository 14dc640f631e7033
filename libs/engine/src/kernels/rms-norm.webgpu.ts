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
