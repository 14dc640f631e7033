import * as tf from '@tensorflow/tfjs-core';
import { runProgram, WgslProgram } from './webgpu-program';

/**
 * Rotary embeddings x * cos + rotate_half(x) * sin for the q and k heads side by side
 * ([N, heads, D], model/rope.ts), as one elementwise WGSL dispatch on webgpu: each output
 * reads its own element and its partner half a head away (rotate_half(x) = [-x2, x1]). The
 * generic path takes four dispatches (a matMul by the signed permutation, two muls, an add).
 *
 * The q/k projection is not fused in: it is a FrozenLinear with LoRA adapters and per-row
 * routing (model/linear.ts), whose output feeds this kernel as it is. Dispatched by rope.ts,
 * which registers the same kernel name for wasm.
 */
export const ROPE_KERNEL = 'TrainyardRope';
const WORKGROUP = 64;

function program(shape: number[]): WgslProgram {
  const size = shape.reduce((a, b) => a * b, 1);
  return {
    variableNames: ['x', 'cosT', 'sinT'],
    outputShape: shape,
    shaderKey: 'trainyardRope',
    dispatchLayout: { x: shape.map((_, i) => i) },
    dispatch: [Math.ceil(size / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    size: true,
    getUserCode: () => `
      fn main(index : i32) {
        if (index >= uniforms.size) { return; }
        let half = uniforms.xShape[2] / 2;
        let first = index % uniforms.xShape[2] < half;
        let partner = x[select(index - half, index + half, first)];
        let rotated = select(partner, -partner, first);
        setOutputAtIndex(index, x[index] * cosT[index] + rotated * sinT[index]);
      }`,
  };
}

tf.registerKernel({
  kernelName: ROPE_KERNEL,
  backendName: 'webgpu',
  kernelFunc: ({ inputs, backend }) => {
    const { x, cos, sin } = inputs as Record<'x' | 'cos' | 'sin', tf.TensorInfo>;
    return runProgram(backend, program(x.shape), [x, cos, sin]);
  },
});
