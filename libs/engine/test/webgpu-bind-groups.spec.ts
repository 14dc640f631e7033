/// <reference types="@webgpu/types" />
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { countGpuWork, GpuCounts } from '../src/kernels/gpu-counters';
import { loadModel } from '../src/loader';
import { DEFAULT_LORA_SPEC } from '../src/lora/peft';
import { LoraTrainer } from '../src/training/trainer';
import { bindGroupCacheOf, cacheBindGroups } from '../src/webgpu-bind-groups';
import { BufferManagerInternals } from '../src/webgpu-buffer-pool';
import { keptUniformsOf, UniformsBackend } from '../src/webgpu-uniforms';
import { makeTiny, webgpuUnavailable } from './helpers';

/**
 * The engine's webgpu device keeps the bind groups its dispatches ask for again
 * (webgpu-bind-groups.ts), the backend its uniform buffers by content (webgpu-uniforms.ts), and
 * tfjs's pool hands out its free buffers in a fixed order (webgpu-buffer-pool.ts), so that a
 * training step over the shapes of the step before binds the same buffers and makes nearly no
 * bind group and no uniform write. On lavapipe where there is no GPU; in CI a missing
 * adapter fails these tests.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) console.warn(`webgpu bind group tests skipped: ${unavailable}`);
const suite = unavailable && !inCi ? describe.skip : describe;

const STORAGE = 0x80 | 0x4 | 0x8; // STORAGE | COPY_SRC | COPY_DST

/** A compute pipeline over `buffers` storage buffers, each written (so that every binding is in its layout). */
function pipelineOver(device: GPUDevice, buffers: number): GPUComputePipeline {
  const bindings = Array.from({ length: buffers }, (_, i) => `@group(0) @binding(${i}) var<storage, read_write> b${i} : array<f32>;`).join('\n');
  const code = `${bindings}\n@compute @workgroup_size(1) fn main() { ${Array.from({ length: buffers }, (_, i) => `b${i}[0] = 1.0;`).join(' ')} }`;
  return device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
}

const over = (pipeline: GPUComputePipeline, buffers: GPUBuffer[], size?: number): GPUBindGroupDescriptor => ({
  layout: pipeline.getBindGroupLayout(0),
  entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer, offset: 0, size: size ?? buffer.size } })),
});

suite("the webgpu device's bind groups and uniforms, kept", () => {
  beforeAll(() => selectBackend('webgpu'));
  afterAll(() => selectBackend('wasm'));

  const device = () => (tf.backend() as unknown as { device: GPUDevice }).device;

  it('answers a bind group over the same layout, buffers and ranges with the one it made, and drops those over a destroyed buffer', async () => {
    const gpu = device();
    const cache = bindGroupCacheOf(gpu);
    expect(cache).toBeDefined();
    const pipeline = pipelineOver(gpu, 2);
    // Dawn makes a new layout object at each ask; the device's pipelines give one.
    expect(pipeline.getBindGroupLayout(0)).toBe(pipeline.getBindGroupLayout(0));
    const [a, b, c] = [0, 1, 2].map(() => gpu.createBuffer({ size: 256, usage: STORAGE }));
    const first = gpu.createBindGroup(over(pipeline, [a, b]));
    expect(gpu.createBindGroup(over(pipeline, [a, b]))).toBe(first);
    // Another buffer, another order, another range, another pipeline's layout: each a bind group of its own.
    const others = [over(pipeline, [a, c]), over(pipeline, [b, a]), over(pipeline, [a, b], 128), over(pipelineOver(gpu, 2), [a, b])].map((d) => gpu.createBindGroup(d));
    expect(new Set([first, ...others]).size).toBe(5);
    // Used in a dispatch twice over, the kept bind group is a valid one.
    const encoder = gpu.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    for (let i = 0; i < 2; i++) {
      pass.setBindGroup(0, gpu.createBindGroup(over(pipeline, [a, b])));
      pass.dispatchWorkgroups(1);
    }
    pass.end();
    gpu.pushErrorScope('validation');
    gpu.queue.submit([encoder.finish()]);
    expect(await gpu.popErrorScope()).toBeNull();
    // b destroyed: the bind groups over it go (a new buffer of b's size may never be bound by an old one).
    const kept = cache?.size ?? 0;
    b.destroy();
    expect(cache?.size).toBe(kept - 4);
    const d = gpu.createBuffer({ size: 256, usage: STORAGE });
    expect(gpu.createBindGroup(over(pipeline, [a, d]))).not.toBe(first);
    [a, c, d].forEach((buffer) => buffer.destroy());
  });

  it('keeps a uniform buffer for each content a dispatch asks for, never written again', async () => {
    const backend = tf.backend() as unknown as UniformsBackend;
    const kept = keptUniformsOf(backend);
    expect(kept).toBeDefined();
    const fields = (n: number) => [
      { type: 'int32', data: [n, 2 * n] },
      { type: 'float32', data: [0.5] },
    ];
    const first = backend.makeUniforms(fields(3));
    expect(backend.makeUniforms(fields(3))).toBe(first);
    expect(backend.makeUniforms(fields(4)).buffer).not.toBe(first.buffer);
    // A kept buffer is not given back to the pool at the next submit, so no other content is written into it.
    expect(backend.uniformPendingDisposal).not.toContain(first.buffer);
    // Programs whose uniforms (their shapes) alternate read each their own (sizes past those tfjs runs on the CPU).
    const sizes = [1500, 2500, 1500, 2500];
    const sums: Float32Array[] = [];
    for (const n of sizes) {
      const { result, counts } = await countGpuWork(() => tf.tidy(() => tf.add(tf.range(0, n), tf.fill([n], 10))).data() as Promise<Float32Array>);
      expect(counts.dispatches).toBeGreaterThan(0);
      sums.push(result);
    }
    sums.forEach((sum, i) => expect(Array.from(sum)).toEqual(Array.from({ length: sizes[i] }, (_, j) => j + 10)));
  });

  it('keeps at most its capacity, the least recently used going first', async () => {
    const adapter = await navigator.gpu.requestAdapter();
    const gpu = await (adapter as GPUAdapter).requestDevice();
    try {
      const cache = cacheBindGroups(gpu, 2);
      expect(cacheBindGroups(gpu, 5)).toBe(cache);
      const pipeline = pipelineOver(gpu, 1);
      const [a, b, c] = [0, 1, 2].map(() => gpu.createBuffer({ size: 64, usage: STORAGE }));
      const [overA, overB] = [a, b].map((buffer) => gpu.createBindGroup(over(pipeline, [buffer])));
      expect(gpu.createBindGroup(over(pipeline, [a]))).toBe(overA); // a used last: b's is the least recent
      gpu.createBindGroup(over(pipeline, [c]));
      expect(cache.size).toBe(2);
      expect(gpu.createBindGroup(over(pipeline, [a]))).toBe(overA);
      expect(gpu.createBindGroup(over(pipeline, [b]))).not.toBe(overB);
      expect({ hits: cache.hits, misses: cache.misses }).toEqual({ hits: 2, misses: 4 });
    } finally {
      gpu.destroy();
    }
  });

  it("hands out a size's free buffers in one order, whatever order they came back in", () => {
    const manager = (tf.backend() as unknown as { bufferManager: BufferManagerInternals }).bufferManager;
    const size = 4 * 12_345;
    const taken = [0, 1, 2].map(() => manager.acquireBuffer(size, STORAGE));
    const again = () => [0, 1, 2].map(() => manager.acquireBuffer(size, STORAGE));
    // Given back in two orders, taken again in the same one: the order they were first made in.
    [2, 0, 1].forEach((i) => manager.releaseBuffer(taken[i]));
    const first = again();
    [1, 2, 0].forEach((i) => manager.releaseBuffer(first[i]));
    const second = again();
    expect(first).toEqual(taken);
    expect(second).toEqual(taken);
    second.forEach((buffer) => manager.releaseBuffer(buffer));
  });

  it('makes one bind group and writes one uniform buffer in a LoRA SFT step over the shapes of the steps before it', async () => {
    const lm = await loadModel(makeTiny('bind-groups-sft'));
    const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC, undefined, { seed: 1, microBatchTokens: 2 * 32 });
    try {
      const rows = [0, 1].map((r) => ({ tokens: Array.from({ length: 32 }, (_, i) => 3 + ((r * 7919 + i * 104729) % 500)), mask: new Array(32).fill(1) }));
      // The first steps make the buffers, then the pool hands them out in its order: from the
      // fourth step on, each dispatch binds the buffers and the uniforms it bound in the step
      // before, but one: the optimizer's program that puts the step's constants (its bias
      // corrections) where the updates read them, whose uniforms are new each step.
      const made: GpuCounts[] = [];
      for (let s = 0; s < 5; s++) made.push((await countGpuWork(() => trainer.sftStepOnTokens(rows, 1e-4))).counts);
      expect(made[0].bindGroups).toBeGreaterThan(0.9 * made[0].dispatches);
      expect(made[0].writes).toBeGreaterThan(10);
      expect(made.slice(3)).toEqual([0, 0].map(() => expect.objectContaining({ bindGroups: 1, writes: 1, dispatches: made[0].dispatches })));
    } finally {
      trainer.dispose();
      lm.dispose();
    }
  }, 120_000);
});
