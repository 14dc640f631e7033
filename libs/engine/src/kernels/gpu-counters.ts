/**
 * Counts what WebGPU work a piece of code makes: compute dispatches, queue submits, readbacks
 * (buffers mapped for reading) and their bytes, bind groups made, uniform and other buffers
 * written from the host and buffers destroyed, by wrapping Dawn's GPUComputePassEncoder.dispatchWorkgroups,
 * GPUQueue.submit, GPUBuffer.mapAsync, GPUDevice.createBindGroup, GPUQueue.writeBuffer and
 * GPUBuffer.destroy while it runs, whoever calls them (the
 * engine's encoded steps and tfjs's backend alike). For benches and tests: the counts are machine
 * independent, so software Vulkan (lavapipe) shows what a step costs as a GPU would run it.
 * Nothing else may use the GPU meanwhile.
 */
export interface GpuCounts {
  dispatches: number;
  submits: number;
  reads: number;
  readBytes: number;
  bindGroups: number;
  /** queue.writeBuffer calls into uniform buffers (a dispatch's uniforms, where they are not kept: webgpu-uniforms.ts). */
  writes: number;
  /** queue.writeBuffer calls into other buffers (host values uploaded: webgpu-uploads.ts; an encoded step's inputs). */
  uploads: number;
  destroyedBuffers: number;
}

type Method = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Replaces `owner[method]` with `around`, which is given the original call to make (with the
 * same receiver and arguments), the receiver and the arguments; returns what puts the original
 * back. For counting and timing the WebGPU calls a piece of code makes (gpuPrototype names
 * their classes).
 */
export function wrapMethod(owner: object, method: string, around: (call: () => unknown, self: unknown, args: unknown[]) => unknown): () => void {
  const methods = owner as Record<string, Method>;
  const original = methods[method];
  methods[method] = function (this: unknown, ...args: unknown[]) {
    return around(() => original.apply(this, args), this, args);
  };
  return () => (methods[method] = original);
}

/** The prototype of a WebGPU class on the global object (GPUQueue, GPUBuffer...); the globals must exist (installNavigatorGpu). */
export function gpuPrototype(className: string): object {
  const prototype = (globalThis as unknown as Record<string, { prototype: object } | undefined>)[className]?.prototype;
  if (!prototype) throw new Error(`no ${className} (webgpu is not installed)`);
  return prototype;
}

/** Counts of no work. */
export function noGpuWork(): GpuCounts {
  return { dispatches: 0, submits: 0, reads: 0, readBytes: 0, bindGroups: 0, writes: 0, uploads: 0, destroyedBuffers: 0 };
}

/** The counts of the countGpuWork calls under way: each counted WebGPU call adds to every one. */
const counting = new Set<GpuCounts>();
/** The methods of each prototype wrapped to count for `counting`, once for the process. */
const countedMethods = new WeakMap<object, Set<string>>();

/**
 * Wraps the counted WebGPU methods, once a prototype, so that each call adds to every count under
 * way. Wrapped once rather than for each countGpuWork, so that calls that overlap (a test's
 * counting left running past its end by an await that never returned, beside the next test's)
 * neither stack wrappers on each other nor put back a method another has wrapped since.
 */
function countCalls(): void {
  const wrap = (className: string, method: string, add: (counts: GpuCounts, self: unknown, args: unknown[]) => void) => {
    const prototype = gpuPrototype(className);
    const wrapped = countedMethods.get(prototype) ?? new Set<string>();
    if (wrapped.has(method)) return;
    wrapMethod(prototype, method, (call, self, args) => {
      for (const counts of counting) add(counts, self, args);
      return call();
    });
    wrapped.add(method);
    countedMethods.set(prototype, wrapped);
  };
  wrap('GPUComputePassEncoder', 'dispatchWorkgroups', (counts) => counts.dispatches++);
  wrap('GPUQueue', 'submit', (counts) => counts.submits++);
  wrap('GPUBuffer', 'mapAsync', (counts, self, [mode, offset, size]) => {
    // GPUMapMode.READ is 1.
    if (mode !== 1) return;
    counts.reads++;
    counts.readBytes += (size as number | undefined) ?? (self as { size: number }).size - ((offset as number | undefined) ?? 0);
  });
  wrap('GPUDevice', 'createBindGroup', (counts) => counts.bindGroups++);
  wrap('GPUQueue', 'writeBuffer', (counts, _, [buffer]) => {
    // GPUBufferUsage.UNIFORM is 64.
    if ((buffer as GPUBuffer).usage & 64) counts.writes++;
    else counts.uploads++;
  });
  wrap('GPUBuffer', 'destroy', (counts) => counts.destroyedBuffers++);
}

/**
 * Runs fn and counts the WebGPU work made while it runs; the globals must exist
 * (installNavigatorGpu). Calls may nest or overlap: each counts every call made while it runs.
 */
export async function countGpuWork<T>(fn: () => Promise<T>): Promise<{ result: T; counts: GpuCounts }> {
  countCalls();
  const counts = noGpuWork();
  counting.add(counts);
  try {
    return { result: await fn(), counts };
  } finally {
    counting.delete(counts);
  }
}
