/**
 * Counts what WebGPU work a piece of code makes: compute dispatches, queue submits, readbacks
 * (buffers mapped for reading) and their bytes, bind groups made and buffers destroyed, by wrapping Dawn's
 * GPUComputePassEncoder.dispatchWorkgroups, GPUQueue.submit, GPUBuffer.mapAsync,
 * GPUDevice.createBindGroup and GPUBuffer.destroy while it runs, whoever calls them (the
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
  return { dispatches: 0, submits: 0, reads: 0, readBytes: 0, bindGroups: 0, destroyedBuffers: 0 };
}

/** Runs fn and counts the WebGPU work it makes; the globals must exist (installNavigatorGpu). */
export async function countGpuWork<T>(fn: () => Promise<T>): Promise<{ result: T; counts: GpuCounts }> {
  const counts = noGpuWork();
  // Each call of className.method adds one to counts[key].
  const counted = (className: string, method: string, key: Exclude<keyof GpuCounts, 'reads' | 'readBytes'>) =>
    wrapMethod(gpuPrototype(className), method, (call) => {
      counts[key]++;
      return call();
    });
  const restore = [
    counted('GPUComputePassEncoder', 'dispatchWorkgroups', 'dispatches'),
    counted('GPUQueue', 'submit', 'submits'),
    wrapMethod(gpuPrototype('GPUBuffer'), 'mapAsync', (call, self, [mode, offset, size]) => {
      // GPUMapMode.READ is 1.
      if (mode === 1) {
        counts.reads++;
        counts.readBytes += (size as number | undefined) ?? (self as { size: number }).size - ((offset as number | undefined) ?? 0);
      }
      return call();
    }),
    counted('GPUDevice', 'createBindGroup', 'bindGroups'),
    counted('GPUBuffer', 'destroy', 'destroyedBuffers'),
  ];
  try {
    return { result: await fn(), counts };
  } finally {
    for (const undo of restore.reverse()) undo();
  }
}
