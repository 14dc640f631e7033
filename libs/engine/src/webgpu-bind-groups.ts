/// <reference types="@webgpu/types" />
import { wrapMethod } from './kernels/gpu-counters';
import { NumberListEntry, NumberListLru } from './number-lists';

/**
 * Bind groups kept for reuse. tfjs's webgpu backend makes a bind group for every dispatch it
 * records (recordAndSubmit), as do the engine's programs that record their own
 * (runMultiOutputProgram), and Dawn's createBindGroup is the dearest call of a dispatch's
 * recording: about 45 µs of the host's time, where setting the pipeline and the bind group and
 * dispatching take 7 (tools/bench/gpu/host.bench.ts). A training step's dispatches bind the same
 * buffers step after step, since the pool hands a tensor of a size its free buffers of that size
 * in a fixed order (webgpu-buffer-pool.ts) and uniforms are kept by content (webgpu-uniforms.ts);
 * so the bind group a dispatch asks for has nearly always been made before, over the same layout,
 * buffers, offsets and sizes.
 *
 * `cacheBindGroups(device)` makes the device's createBindGroup return the bind group it made
 * before for the same layout and buffer bindings, keeping the most recently used `capacity`.
 * A bind group is immutable and may be used in any number of command buffers, so the one kept
 * is the one the caller would have made. Two things keep the cache honest:
 * - a compute pipeline's getBindGroupLayout gives one layout object an index (Dawn makes a new
 *   object at each ask, and tfjs asks at each dispatch), so that a layout is known again;
 * - a destroyed buffer's bind groups are dropped at once (a bind group over a destroyed buffer
 *   fails the submit that uses it), and a buffer the pool destroys is not seen again.
 * Entries that are not buffers (samplers, textures) are passed through, uncached.
 */

/** The bind groups a cache keeps over `device`, and how it has done. */
export interface BindGroupCache {
  /** Bind groups kept now. */
  readonly size: number;
  /** Calls answered with a kept bind group, and calls that made one. */
  readonly hits: number;
  readonly misses: number;
  /** Most bind groups kept; the least recently used go first. */
  readonly capacity: number;
}

const caches = new WeakMap<GPUDevice, BindGroupCache>();
/** Every cache's forgetting of a destroyed buffer (GPUBuffer.destroy calls them). */
const forgetters = new Set<(buffer: GPUBuffer) => void>();
/** Whether GPUBuffer's destroy tells `forgetters`: wrapped once for the process. */
let destroyWatched = false;

/** A number for each object the caches key on (layouts, buffers), given at first sight. */
const ids = new WeakMap<object, number>();
let nextId = 1;
function idOf(object: object): number {
  let id = ids.get(object);
  if (id === undefined) ids.set(object, (id = nextId++));
  return id;
}

/** Wraps GPUBuffer's destroy, once, so that each cache drops the bind groups over a buffer destroyed. */
function watchDestroyedBuffers(buffer: GPUBuffer): void {
  if (destroyWatched) return;
  wrapMethod(Object.getPrototypeOf(buffer) as object, 'destroy', (call, self) => {
    for (const forget of forgetters) forget(self as GPUBuffer);
    return call();
  });
  destroyWatched = true;
}

/**
 * What a bind group over buffers only is made over, as numbers: its layout's, then each entry's
 * binding, buffer, offset and size (-1: the rest of the buffer); null where an entry is not a
 * buffer binding.
 */
function bindingsOf(descriptor: GPUBindGroupDescriptor): number[] | null {
  const over = [idOf(descriptor.layout)];
  for (const entry of descriptor.entries) {
    const resource = entry.resource as Partial<GPUBufferBinding>;
    if (!resource.buffer) return null;
    over.push(entry.binding, idOf(resource.buffer), resource.offset ?? 0, resource.size ?? -1);
  }
  return over;
}

/** The numbers of the buffers in bindingsOf's numbers. */
const buffersIn = (over: readonly number[]) => over.filter((_, i) => i % 4 === 2);

/**
 * Makes `device` keep its bind groups for reuse (once a device; a second call returns the first
 * cache): its createBindGroup, createComputePipeline, createComputePipelineAsync and destroy are
 * wrapped on the device itself, each miss calling the prototype's createBindGroup as it is then (so that
 * the calls counted or timed there are the bind groups made).
 */
export function cacheBindGroups(device: GPUDevice, capacity = 16384): BindGroupCache {
  const known = caches.get(device);
  if (known) return known;
  const prototype = Object.getPrototypeOf(device) as GPUDevice;
  type Kept = NumberListEntry<GPUBindGroup>;
  /** The bind groups over each buffer, for dropping them when it is destroyed. */
  const keptOver = new Map<number, Set<Kept>>();
  const kept = new NumberListLru<GPUBindGroup>(capacity, {
    added: (entry) => {
      for (const buffer of buffersIn(entry.numbers)) {
        let over = keptOver.get(buffer);
        if (!over) keptOver.set(buffer, (over = new Set()));
        over.add(entry);
      }
    },
    dropped: (entry) => {
      for (const buffer of buffersIn(entry.numbers)) {
        const over = keptOver.get(buffer);
        over?.delete(entry);
        if (over?.size === 0) keptOver.delete(buffer);
      }
    },
  });
  const forget = (buffer: GPUBuffer) => {
    const id = ids.get(buffer);
    const over = id === undefined ? undefined : keptOver.get(id);
    if (over) [...over].forEach((entry) => kept.delete(entry));
  };
  forgetters.add(forget);
  // A destroyed device's bind groups go with it.
  device.destroy = () => {
    forgetters.delete(forget);
    kept.clear();
    keptOver.clear();
    prototype.destroy.call(device);
  };

  device.createBindGroup = (descriptor: GPUBindGroupDescriptor): GPUBindGroup => {
    const over = bindingsOf(descriptor);
    if (over === null) return prototype.createBindGroup.call(device, descriptor);
    return kept.keep(over, () => {
      for (const entry of descriptor.entries) watchDestroyedBuffers((entry.resource as GPUBufferBinding).buffer);
      return prototype.createBindGroup.call(device, descriptor);
    });
  };

  // One layout object for each of a pipeline's groups, so that a layout asked for again is the same key.
  const layoutsOnce = (pipeline: GPUComputePipeline): GPUComputePipeline => {
    const layouts = new Map<number, GPUBindGroupLayout>();
    const ask = pipeline.getBindGroupLayout.bind(pipeline);
    pipeline.getBindGroupLayout = (index: number) => {
      let layout = layouts.get(index);
      if (!layout) layouts.set(index, (layout = ask(index)));
      return layout;
    };
    return pipeline;
  };
  device.createComputePipeline = (descriptor) => layoutsOnce(prototype.createComputePipeline.call(device, descriptor));
  device.createComputePipelineAsync = async (descriptor) => layoutsOnce(await prototype.createComputePipelineAsync.call(device, descriptor));

  // Its size, counts and capacity are the cache's.
  caches.set(device, kept);
  return kept;
}

/** The bind group cache of `device`, if it has one. */
export function bindGroupCacheOf(device: GPUDevice): BindGroupCache | undefined {
  return caches.get(device);
}
