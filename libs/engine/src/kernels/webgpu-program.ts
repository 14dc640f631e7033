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
 * (the kernels register no tape gradients: a taped pass differentiates through the generic ops,
 * while a training step's explicit backward, ops/decoder-block-gradient.ts, runs the kernels'
 * own backward programs).
 */
export function fusedKernelsApply(): boolean {
  return enabled && tf.getBackend() === 'webgpu' && !tf.engine().isTapeOn();
}

/**
 * A WGSL program with several outputs, which tfjs's runWebGPUProgram (one output a program)
 * cannot run: a LoRA projection's backward makes dx and the adapters' factor gradients, one
 * tensor each. The program is whole WGSL with its own bindings: 0 the uniforms (a struct of
 * 4-byte scalars, in `uniforms`' order), then the inputs (read-only storage) in order, then the
 * outputs (read-write storage), at most eight storage buffers in all (WebGPU's default
 * maxStorageBuffersPerShaderStage, which tfjs's device keeps). runMultiOutputProgram records its
 * dispatch in tfjs's own command encoder and compute pass, as runWebGPUProgram records one, so
 * it is ordered with tfjs's work and submitted with it.
 */
export interface MultiOutputProgram {
  /** Names the compiled pipeline: two programs with one key must have one WGSL. */
  key: string;
  wgsl(): string;
  outputShapes: number[][];
  dispatch: [number, number, number];
  uniforms: { type: 'uint32' | 'float32'; value: number }[];
}

/** What runMultiOutputProgram uses of tfjs-backend-webgpu 4.22's WebGPUBackend. */
interface WebGpuBackendRecording {
  device: GPUDevice;
  commandEncoder: GPUCommandEncoder | null;
  computePassEncoder: GPUComputePassEncoder | null;
  dispatchCountInPass: number;
  commandQueueOwnedIds: WeakSet<object>;
  makeTensorInfo(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  uploadToGPU(dataId: object): void;
  tensorToBinding(tensor: tf.TensorInfo): GPUBufferBinding;
  makeUniforms(uniforms: { type: string; data: number[] }[]): GPUBufferBinding;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
  /** Set while tf.profile (or tf.time) times kernels: each program's name and GPU time go here. */
  activeTimers: { name: string; query: Promise<number> }[] | null;
  supportTimestampQuery: boolean;
  querySet: GPUQuerySet | null;
  querySetCount: number;
  /** The GPU time of the last timed pass, in ms (0 without timestamp queries). */
  getQueryTime(): Promise<number>;
}

/** Storage buffers every WebGPU device lets a program bind (the default maxStorageBuffersPerShaderStage). */
export const MAX_STORAGE_BUFFERS = 8;

let storageBufferCap = Infinity;

/**
 * Storage buffers a program may bind on the webgpu backend now (`backend`, or tfjs's current
 * one): the device's limit, which the engine asks as high as the adapter goes
 * (registerWebGpuDevice), at least MAX_STORAGE_BUFFERS; at most capStorageBuffers' cap.
 */
export function storageBufferLimit(backend: object = tf.backend()): number {
  const limit = (backend as Partial<WebGpuBackendRecording>).device?.limits.maxStorageBuffersPerShaderStage ?? 0;
  return Math.max(MAX_STORAGE_BUFFERS, Math.min(limit, storageBufferCap));
}

/** The most bytes one storage buffer binding may span on the webgpu backend now (`backend`, or tfjs's current one): the device's limit, at least WebGPU's default 128 MB. */
export function storageBindingBytes(backend: object = tf.backend()): number {
  return Math.max(STORAGE_BINDING_BYTES, (backend as Partial<WebGpuBackendRecording>).device?.limits.maxStorageBufferBindingSize ?? 0);
}

/** Bytes every WebGPU device lets one storage binding span (the default maxStorageBufferBindingSize). */
const STORAGE_BINDING_BYTES = 1 << 27;

/** Caps storageBufferLimit (Infinity: the device's), so that tests take the programs a device binding fewer takes. */
export function capStorageBuffers(cap: number): void {
  storageBufferCap = cap;
}

/** Workgroup memory every WebGPU device offers a program (maxComputeWorkgroupStorageSize's default). */
export const WORKGROUP_MEMORY = 16384;
/**
 * The most workgroup memory programs sized to the device are given: 32 KB, what lavapipe (on
 * which CI checks the programs) offers, so that a device offering more runs the tiles CI checks.
 */
const MAX_WORKGROUP_MEMORY = 32768;

let workgroupMemoryCap = Infinity;

/** Workgroup memory a program may take on the webgpu backend now (`backend`, or tfjs's current one): the device's, between WORKGROUP_MEMORY and MAX_WORKGROUP_MEMORY, at most capWorkgroupMemory's cap. */
export function workgroupMemoryLimit(backend: object = tf.backend()): number {
  const limit = (backend as Partial<WebGpuBackendRecording>).device?.limits.maxComputeWorkgroupStorageSize ?? 0;
  return Math.max(WORKGROUP_MEMORY, Math.min(limit, MAX_WORKGROUP_MEMORY, workgroupMemoryCap));
}

/** Caps workgroupMemoryLimit (Infinity: the device's), so that tests take the tiles a device offering less takes. */
export function capWorkgroupMemory(cap: number): void {
  workgroupMemoryCap = cap;
}

/**
 * A kernel's programs kept by a key that names the program and every size compiled into it or
 * dispatched by it (the `capacity` most recently used): a kernel called again with the shapes of
 * a call before takes the program it made then, where making it builds its WGSL's parts as
 * strings at every call. A training step calls the engine's kernels over a thousand times, each
 * with the shapes of the step before. A kept program must not be changed by its caller.
 */
export function keptPrograms<P>(capacity = 1024): (key: string, make: () => P) => P {
  const kept = new Map<string, P>();
  return (key, make) => {
    let program = kept.get(key);
    if (program === undefined) {
      program = make();
      if (kept.size >= capacity) kept.delete(kept.keys().next().value as string);
    } else {
      // Most recently used last: a Map iterates in insertion order.
      kept.delete(key);
    }
    kept.set(key, program);
    return program;
  };
}

/** Each program's uniforms as tfjs's makeUniforms takes them, made once for a program called again (keptPrograms). */
const uniformFields = new WeakMap<MultiOutputProgram, { type: string; data: number[] }[]>();

function uniformFieldsOf(program: MultiOutputProgram): { type: string; data: number[] }[] {
  let fields = uniformFields.get(program);
  if (!fields) uniformFields.set(program, (fields = program.uniforms.map((u) => ({ type: u.type, data: [u.value] }))));
  return fields;
}

/** Each device's compiled programs by key (their bind group layouts: one object a pipeline, webgpu-bind-groups.ts). */
const pipelines = new WeakMap<GPUDevice, Map<string, GPUComputePipeline>>();

/**
 * Runs `program` on the webgpu backend that called a kernelFunc: its outputs, new tensors.
 * `buffers` are the caller's, bound after the outputs in order, as the program declares them (a
 * uniform the GPU wrote: adamw.webgpu.ts).
 */
export function runMultiOutputProgram(backend: object, program: MultiOutputProgram, inputs: tf.TensorInfo[], buffers: GPUBufferBinding[] = []): tf.TensorInfo[] {
  const b = backend as WebGpuBackendRecording;
  const limit = storageBufferLimit(backend);
  if (inputs.length + program.outputShapes.length > limit) throw new Error(`${program.key}: ${inputs.length} inputs and ${program.outputShapes.length} outputs exceed ${limit} storage buffers`);
  const outputs = program.outputShapes.map((shape) => b.makeTensorInfo(shape, 'float32'));
  const tensors = inputs.concat(outputs);
  for (const t of tensors) b.uploadToGPU(t.dataId);
  let cache = pipelines.get(b.device);
  if (!cache) pipelines.set(b.device, (cache = new Map()));
  let pipeline = cache.get(program.key);
  if (!pipeline) {
    pipeline = b.device.createComputePipeline({ layout: 'auto', compute: { module: b.device.createShaderModule({ code: wgslModule(program.wgsl()) }), entryPoint: 'main' } });
    cache.set(program.key, pipeline);
  }
  const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: b.makeUniforms(uniformFieldsOf(program)) }];
  for (const t of tensors) {
    entries.push({ binding: entries.length, resource: b.tensorToBinding(t) });
    b.commandQueueOwnedIds.add(t.dataId);
  }
  for (const resource of buffers) entries.push({ binding: entries.length, resource });
  const bindGroup = b.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
  b.ensureCommandEncoderReady();
  // While tf.profile times kernels, as runWebGPUProgram: the dispatch in a pass of its own whose
  // start and end go to the backend's query set, its time pushed under the program's key.
  const timed = b.activeTimers !== null && b.activeTimers !== undefined;
  if (timed && b.supportTimestampQuery) {
    b.endComputePassEncoder();
    b.querySet ??= b.device.createQuerySet({ type: 'timestamp', count: b.querySetCount });
    b.computePassEncoder = (b.commandEncoder as GPUCommandEncoder).beginComputePass({ timestampWrites: { querySet: b.querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } });
  } else if (!b.computePassEncoder) {
    b.computePassEncoder = (b.commandEncoder as GPUCommandEncoder).beginComputePass({});
  }
  b.computePassEncoder.setPipeline(pipeline);
  b.computePassEncoder.setBindGroup(0, bindGroup);
  b.computePassEncoder.dispatchWorkgroups(...program.dispatch);
  b.dispatchCountInPass++;
  // As runWebGPUProgram: the pass is submitted every WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE dispatches (backend.ts sets it).
  if (timed) {
    b.endComputePassEncoder();
    (b.activeTimers as NonNullable<typeof b.activeTimers>).push({ name: program.key, query: b.getQueryTime() });
  } else if (b.dispatchCountInPass >= (tf.env().get('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE') as number)) {
    b.endComputePassEncoder();
    b.submitQueue();
  }
  return outputs;
}

/**
 * A float32 tensor of zeros on the webgpu backend, its buffer cleared in tfjs's command encoder
 * (clearBuffer, ordered with the programs recorded before and after it) where tf.fill dispatches
 * a program with a bind group and uniforms of its own; null where the fused kernels do not apply.
 * A KV cache's layers are made this way, 60 tensors for a 30-layer model's prompt.
 */
export function zerosOnGpu(shape: number[]): tf.Tensor | null {
  if (!fusedKernelsApply()) return null;
  const b = tf.backend() as unknown as WebGpuBackendRecording;
  const info = b.makeTensorInfo(shape, 'float32');
  b.uploadToGPU(info.dataId);
  b.ensureCommandEncoderReady();
  b.endComputePassEncoder();
  (b.commandEncoder as GPUCommandEncoder).clearBuffer(b.tensorToBinding(info).buffer);
  b.commandQueueOwnedIds.add(info.dataId);
  return tf.engine().makeTensorFromTensorInfo(info);
}

/** A global directive (WGSL's `enable`, `requires`, `diagnostic`), which must come before any declaration. */
const DIRECTIVE = /^\s*(enable|requires|diagnostic)\b[^;]*;\s*$/;

/**
 * WGSL assembled from parts (bindings, a product, an epilogue) as a module: the parts' global
 * directives, each once, moved to its start.
 */
export function wgslModule(code: string): string {
  const lines = code.split('\n');
  const directives = [...new Set(lines.filter((line) => DIRECTIVE.test(line)).map((line) => line.trim()))];
  return directives.length === 0 ? code : [...directives, ...lines.filter((line) => !DIRECTIVE.test(line))].join('\n');
}

/** Workgroups along x, then y, for `count` workgroups in all (65,535 a dimension); the program takes its workgroup as wg.y * groups.x + wg.x. */
export function workgroupGrid(count: number): [number, number, number] {
  const y = Math.ceil(count / 65535);
  return [Math.ceil(count / y), y, 1];
}

/**
 * The WGSL declaring a MultiOutputProgram's bindings in runMultiOutputProgram's order: 0 the
 * uniforms as `u`, a struct of `uniformFields` ("M : u32"), then `inputs` read-only, then
 * `outputs` read-write, every one an array<f32>; an input named "name:i32" is an int32
 * tensor's buffer (array<i32>), "name:u32" the same buffer's bits as array<u32>, one named
 * "name:rw" is written in place (read-write: only for a tensor its caller owns alone, since tfjs
 * does not know it changed).
 */
export function multiOutputBindings(uniformFields: string, inputs: string[], outputs: string[]): string {
  return [
    `struct Uniforms { ${uniformFields} }`,
    '@group(0) @binding(0) var<uniform> u : Uniforms;',
    ...inputs.map((spec, i) => {
      const [name, ...marks] = spec.split(':');
      return `@group(0) @binding(${i + 1}) var<storage, ${marks.includes('rw') ? 'read_write' : 'read'}> ${name} : array<${marks.find((m) => m === 'i32' || m === 'u32') ?? 'f32'}>;`;
    }),
    ...outputs.map((name, i) => `@group(0) @binding(${inputs.length + i + 1}) var<storage, read_write> ${name} : array<f32>;`),
  ].join('\n');
}

/**
 * The opening of an entry point over a flat grid of `workgroup` threads a workgroup, dispatched
 * as workgroupGrid lays it out: `i` the thread's index among all of them. The body that follows
 * closes `main`.
 */
export function flatMain(workgroup: number): string {
  return `@compute @workgroup_size(${workgroup})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let i = (wg.y * groups.x + wg.x) * ${workgroup}u + tid;`;
}

/** Frees a tensor a kernelFunc made on the webgpu backend for its own use (an intermediate between its programs). */
export function disposeIntermediate(backend: object, tensor: tf.TensorInfo): void {
  (backend as { disposeData(dataId: object): void }).disposeData(tensor.dataId);
}
