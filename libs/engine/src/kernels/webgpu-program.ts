import * as tf from '@tensorflow/tfjs-core';

/**
 * What the engine's fused WGSL kernels share: the switch that turns them off, and the shape of
 * a program as `@tensorflow/tfjs-backend-webgpu` runs it. A kernel is a tfjs kernel registered
 * for the `webgpu` backend whose kernelFunc hands such a program to the backend's
 * runWebGPUProgram: tfjs compiles it once per shape key (prepending the bindings, the uniform
 * struct and helpers such as setOutputAtIndex), caches the pipeline and records the dispatch in
 * its own command encoder, so a fused kernel is one more dispatch among tfjs's, with no read-back.
 * The program is typed here structurally: the package is loaded only once `navigator.gpu`
 * exists (backend.ts), never imported by this file.
 */

/** The fields of tfjs-backend-webgpu 4.22's WebGPUProgram that the engine's kernels set. */
export interface WgslProgram {
  variableNames: string[];
  outputShape: number[];
  shaderKey: string;
  dispatchLayout: { x: number[] };
  dispatch: [number, number, number];
  workgroupSize: [number, number, number];
  /** Extra uniform fields, WGSL struct syntax ("eps : f32,"), filled from the values passed to runProgram. */
  uniforms?: string;
  /** Adds `uniforms.size`: the output's element count. */
  size?: boolean;
  /** WGSL defining `fn main(index : i32)`, index the global invocation index. */
  getUserCode(): string;
}

export interface ProgramUniform {
  type: 'float32' | 'int32';
  data: number[];
}

interface WebGpuBackendInternals {
  runWebGPUProgram(program: WgslProgram, inputs: tf.TensorInfo[], outputDtype: tf.DataType, uniforms?: ProgramUniform[]): tf.TensorInfo;
}

/** Runs `program` on the webgpu backend that called a kernelFunc. */
export function runProgram(backend: object, program: WgslProgram, inputs: tf.TensorInfo[], uniforms?: ProgramUniform[]): tf.TensorInfo {
  return (backend as WebGpuBackendInternals).runWebGPUProgram(program, inputs, 'float32', uniforms);
}

/**
 * The workgroup's index among all of a dispatch's workgroups: tfjs reshapes a dispatch of more
 * than 65535 workgroups along x into x and y (and z), so a few workgroups past the end may run.
 * WGSL's uniformity analysis does not see this as uniform (tfjs copies the builtins into
 * private variables), so a kernel with barriers does not return early past the end: it clamps
 * the index and skips its writes.
 */
export const WORKGROUP_INDEX = 'i32((workgroupId.z * numWorkgroups.y + workgroupId.y) * numWorkgroups.x + workgroupId.x)';

let enabled = true;

/**
 * Turns the engine's WGSL on or off (WEBGPU_FUSED_KERNELS): the fused kernels here and the
 * encoded step (decode-step.webgpu.ts). Off, the webgpu backend runs the same generic tfjs ops
 * as every other backend: the reference the kernels are tested against (`--kernels off` in the
 * GPU bench).
 */
export function setFusedKernels(on: boolean): void {
  enabled = on;
}

export function fusedKernelsEnabled(): boolean {
  return enabled;
}

/**
 * True when a fused kernel may run now: on webgpu, switched on, and outside a gradient tape
 * (the kernels have no gradients; training differentiates through the generic ops).
 */
export function fusedKernelsApply(): boolean {
  return enabled && tf.getBackend() === 'webgpu' && !tf.engine().isTapeOn();
}
