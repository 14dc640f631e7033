/**
 * Counts what WebGPU work a piece of code makes: compute dispatches, queue submits and bytes
 * mapped for reading back, by wrapping Dawn's GPUComputePassEncoder.dispatchWorkgroups,
 * GPUQueue.submit and GPUBuffer.mapAsync while it runs, whoever calls them (the engine's
 * encoded steps and tfjs's backend alike). For benches and tests: the counts are machine
 * independent, so software Vulkan (lavapipe) shows what a step costs as a GPU would run it.
 * Nothing else may use the GPU meanwhile.
 */
export interface GpuCounts {
  dispatches: number;
  submits: number;
  readBytes: number;
}

type Method = (this: unknown, ...args: unknown[]) => unknown;

/** Runs fn and counts the WebGPU work it makes; the globals must exist (installNavigatorGpu). */
export async function countGpuWork<T>(fn: () => Promise<T>): Promise<{ result: T; counts: GpuCounts }> {
  const counts: GpuCounts = { dispatches: 0, submits: 0, readBytes: 0 };
  const globals = globalThis as unknown as Record<string, { prototype: Record<string, Method> } | undefined>;
  const wrapped: [Record<string, Method>, string, Method][] = [];
  const wrap = (className: string, method: string, count: (self: unknown, args: unknown[]) => void) => {
    const prototype = globals[className]?.prototype;
    if (!prototype) throw new Error(`countGpuWork: no ${className} (webgpu is not installed)`);
    const original = prototype[method];
    wrapped.push([prototype, method, original]);
    prototype[method] = function (this: unknown, ...args: unknown[]) {
      count(this, args);
      return original.apply(this, args);
    };
  };
  wrap('GPUComputePassEncoder', 'dispatchWorkgroups', () => counts.dispatches++);
  wrap('GPUQueue', 'submit', () => counts.submits++);
  wrap('GPUBuffer', 'mapAsync', (self, [mode, offset, size]) => {
    // GPUMapMode.READ is 1.
    if (mode === 1) counts.readBytes += (size as number | undefined) ?? (self as { size: number }).size - ((offset as number | undefined) ?? 0);
  });
  try {
    return { result: await fn(), counts };
  } finally {
    for (const [prototype, method, original] of wrapped.reverse()) prototype[method] = original;
  }
}
