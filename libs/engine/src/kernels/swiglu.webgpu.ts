import * as tf from '@tensorflow/tfjs-core';
import { runProgram, WgslProgram } from './webgpu-program';

/**
 * SwiGLU, silu(gate) * up for gateUp [M, 2F] (gate | up) -> [M, F], as one elementwise WGSL
 * dispatch on webgpu, where the generic ops take five (two slices, the sigmoid, two products).
 * Dispatched by swiglu.ts, which registers the same kernel name for wasm.
 */
export const SWIGLU_KERNEL = 'TrainyardSwiGlu';
const WORKGROUP = 64;

function forwardProgram(M: number, F: number): WgslProgram {
  return {
    variableNames: ['gateUp'],
    outputShape: [M, F],
    shaderKey: 'trainyardSwiGlu',
    dispatchLayout: { x: [0, 1] },
    dispatch: [Math.ceil((M * F) / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    size: true,
    getUserCode: () => `
      fn main(index : i32) {
        if (index >= uniforms.size) { return; }
        let F = uniforms.outShape[1];
        let row = index / F;
        let at = row * 2 * F + index - row * F;
        let g = gateUp[at];
        setOutputAtIndex(index, g / (1.0 + exp(-g)) * gateUp[at + F]);
      }`,
  };
}

tf.registerKernel({
  kernelName: SWIGLU_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const { gateUp } = inputs as Record<'gateUp', tf.TensorInfo>;
    return runProgram(backend, forwardProgram(gateUp.shape[0], gateUp.shape[1] / 2), [gateUp]);
  },
});

/**
 * SwiGLU's backward as one elementwise WGSL dispatch on webgpu: for gateUp [M, 2F] (gate | up)
 * and the output's gradient dy [M, F], each invocation writes one column pair of d gateUp,
 *
 *   d gate = dy u s (1 + g (1 - s)),   d up = dy g s,   s = sigmoid(g)
 *
 * (ops/swiglu.ts, swigluBackward), where the generic ops take about ten dispatches (a split,
 * the sigmoid, the products and a concat). Dispatched by swiglu.ts, which registers the same
 * kernel name for wasm.
 */
export const SWIGLU_BACKWARD_KERNEL = 'TrainyardSwiGluBackward';

function program(M: number, F: number): WgslProgram {
  return {
    variableNames: ['gateUp', 'dy'],
    outputShape: [M, 2 * F],
    shaderKey: 'trainyardSwiGluBackward',
    dispatchLayout: { x: [0, 1] },
    dispatch: [Math.ceil((M * F) / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    getUserCode: () => `
      fn main(index : i32) {
        let F = uniforms.dyShape[1];
        if (index >= uniforms.dyShape[0] * F) { return; }
        let row = index / F;
        let col = index - row * F;
        let at = row * 2 * F + col;
        let g = gateUp[at];
        let u = gateUp[at + F];
        let d = dy[index];
        let s = 1.0 / (1.0 + exp(-g));
        setOutputAtIndex(at, d * u * s * (1.0 + g * (1.0 - s)));
        setOutputAtIndex(at + F, d * g * s);
      }`,
  };
}

tf.registerKernel({
  kernelName: SWIGLU_BACKWARD_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const { gateUp, dy } = inputs as Record<'gateUp' | 'dy', tf.TensorInfo>;
    return runProgram(backend, program(dy.shape[0], dy.shape[1]), [gateUp, dy]);
  },
});
