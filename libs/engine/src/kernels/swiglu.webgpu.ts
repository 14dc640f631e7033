import * as tf from '@tensorflow/tfjs-core';
import type { HiddenAct } from '../config';
import { gateActivationWgsl } from './gate-activation.wgsl';
import { fusedKernelsApply, runProgram, WgslProgram } from './webgpu-program';

/**
 * A gated MLP's activation as WGSL on webgpu, forward and backward, elementwise over gateUp
 * [M, 2F] (gate | up): SwiGLU, silu(gate) * up, and Gemma's GeGLU, gelu(gate) * up with GELU's
 * tanh approximation (ops/gelu.ts). The generic ops take five dispatches forward and about ten
 * backward for SwiGLU; for GeGLU these programs took a Gemma 3 LoRA SFT step from 82 to 38
 * dispatches a layer (tools/bench/gpu/gpu.bench.ts --count). Dispatched by swiglu.ts (which
 * registers the SwiGLU names for wasm too) and gelu.ts; the down projection's backward on
 * webgpu applies the same backward in its epilogue (lora.webgpu.ts).
 */
export const SWIGLU_KERNEL = 'TrainyardSwiGlu';
export const SWIGLU_BACKWARD_KERNEL = 'TrainyardSwiGluBackward';
export const GEGLU_KERNEL = 'TrainyardGeGlu';
export const GEGLU_BACKWARD_KERNEL = 'TrainyardGeGluBackward';
const WORKGROUP = 64;

function forwardProgram(activation: HiddenAct, M: number, F: number): WgslProgram {
  return {
    variableNames: ['gateUp'],
    outputShape: [M, F],
    shaderKey: `trainyardGated_${activation}`,
    dispatchLayout: { x: [0, 1] },
    dispatch: [Math.ceil((M * F) / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    size: true,
    getUserCode: () => `
      ${gateActivationWgsl(activation)}
      fn main(index : i32) {
        if (index >= uniforms.size) { return; }
        let F = uniforms.outShape[1];
        let row = index / F;
        let at = row * 2 * F + index - row * F;
        setOutputAtIndex(index, gateValue(gateUp[at]) * gateUp[at + F]);
      }`,
  };
}

/**
 * The backward: for gateUp [M, 2F] and the output's gradient dy [M, F], each invocation writes
 * one column pair of d gateUp, d gate = dy u a'(g) and d up = dy a(g).
 */
function backwardProgram(activation: HiddenAct, M: number, F: number): WgslProgram {
  return {
    variableNames: ['gateUp', 'dy'],
    outputShape: [M, 2 * F],
    shaderKey: `trainyardGatedBackward_${activation}`,
    dispatchLayout: { x: [0, 1] },
    dispatch: [Math.ceil((M * F) / WORKGROUP), 1, 1],
    workgroupSize: [WORKGROUP, 1, 1],
    getUserCode: () => `
      ${gateActivationWgsl(activation)}
      fn main(index : i32) {
        let F = uniforms.dyShape[1];
        if (index >= uniforms.dyShape[0] * F) { return; }
        let row = index / F;
        let col = index - row * F;
        let at = row * 2 * F + col;
        let g = gateUp[at];
        let d = dy[index];
        setOutputAtIndex(at, d * gateUp[at + F] * gateSlope(g));
        setOutputAtIndex(at + F, d * gateValue(g));
      }`,
  };
}

for (const [activation, forward, backward] of [
  ['silu', SWIGLU_KERNEL, SWIGLU_BACKWARD_KERNEL],
  ['gelu_pytorch_tanh', GEGLU_KERNEL, GEGLU_BACKWARD_KERNEL],
] as const) {
  tf.registerKernel({
    kernelName: forward,
    backendName: 'webgpu',
    kernelFunc: ({ inputs, backend }) => {
      const { gateUp } = inputs as Record<'gateUp', tf.TensorInfo>;
      return runProgram(backend, forwardProgram(activation, gateUp.shape[0], gateUp.shape[1] / 2), [gateUp]);
    },
  });
  tf.registerKernel({
    kernelName: backward,
    backendName: 'webgpu',
    kernelFunc: ({ inputs, backend }) => {
      const { gateUp, dy } = inputs as Record<'gateUp' | 'dy', tf.TensorInfo>;
      return runProgram(backend, backwardProgram(activation, dy.shape[0], dy.shape[1]), [gateUp, dy]);
    },
  });
}

/** geglu's forward (gelu(gate) * up) as one WGSL dispatch, or null where the fused kernels do not apply (not webgpu, a tape, not float32). */
export function geglu(gateUp: tf.Tensor2D): tf.Tensor2D | null {
  if (!fusedKernelsApply() || gateUp.dtype !== 'float32' || gateUp.shape[1] % 2 !== 0) return null;
  return tf.engine().runKernel(GEGLU_KERNEL, { gateUp }) as tf.Tensor2D;
}

/** geglu's backward, d gateUp [M, 2F], as one WGSL dispatch, or null where the fused kernels do not apply. */
export function gegluGradient(gateUp: tf.Tensor2D, dy: tf.Tensor2D): tf.Tensor2D | null {
  if (!fusedKernelsApply() || gateUp.dtype !== 'float32' || dy.dtype !== 'float32') return null;
  return tf.engine().runKernel(GEGLU_BACKWARD_KERNEL, { gateUp, dy }) as tf.Tensor2D;
}
