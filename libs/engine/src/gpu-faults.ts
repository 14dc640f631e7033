/// <reference types="@webgpu/types" />

/**
 * The errors a WebGPU device reports that no call returns. A failed allocation (past the GPU's
 * memory, or a buffer past the device's size limit) or an invalid call is raised only as an
 * event on the device, and every call after it that uses what it made is invalid too: a
 * readback then fails with a bare OperationError or, where only what it copied from was invalid,
 * returns values made of nothing. The engine watches its device (watchGpuFaults) and, whenever a
 * readback settles, throws the first error since the last readback in place of its values or its
 * own error (readChecked), saying what Dawn said. Dawn raises these events within the call that
 * failed, so by the time a readback settles every error of the work it waited for has been seen.
 * A lost device is a fault of every readback from then on.
 */
export type GpuFaultKind = 'out-of-memory' | 'validation' | 'internal' | 'lost';

const WHAT: Record<GpuFaultKind, string> = {
  'out-of-memory': 'the GPU is out of memory',
  validation: 'the GPU rejected a call',
  internal: 'the GPU failed',
  lost: 'the GPU device was lost',
};

export class GpuFault extends Error {
  constructor(
    readonly kind: GpuFaultKind,
    /** What Dawn said, on one line. */
    readonly detail: string,
    /** Errors the device reported after this one, before it was thrown. */
    readonly more = 0,
  ) {
    super(`${WHAT[kind]}: ${detail}${more > 0 ? ` (and ${more} more error${more === 1 ? '' : 's'} after it)` : ''}`);
    this.name = 'GpuFault';
  }
}

interface Watch {
  first: { kind: GpuFaultKind; detail: string } | null;
  more: number;
  lost: string | null;
}

const watches = new WeakMap<GPUDevice, Watch>();

/** Dawn's multi-line message on one line: "X.\n - While calling Y." becomes "X. While calling Y." */
function oneLine(message: string): string {
  return message
    .split('\n')
    .map((line) => line.trim().replace(/^- /, ''))
    .filter(Boolean)
    .join(' ');
}

function kindOf(error: GPUError): GpuFaultKind {
  const classes = globalThis as unknown as Record<string, (abstract new (...args: never[]) => unknown) | undefined>;
  const is = (name: string) => typeof classes[name] === 'function' && error instanceof (classes[name] as abstract new (...args: never[]) => unknown);
  if (is('GPUOutOfMemoryError')) return 'out-of-memory';
  if (is('GPUValidationError')) return 'validation';
  return 'internal';
}

/** Starts recording `device`'s uncaptured errors and its loss (once per device). */
export function watchGpuFaults(device: GPUDevice): void {
  if (watches.has(device)) return;
  const watch: Watch = { first: null, more: 0, lost: null };
  watches.set(device, watch);
  device.addEventListener('uncapturederror', (event) => {
    const error = (event as GPUUncapturedErrorEvent).error;
    if (watch.first) watch.more++;
    else watch.first = { kind: kindOf(error), detail: oneLine(error.message) };
  });
  void whenLost(device).then((fault) => {
    watch.lost = fault.detail;
  });
}

/** Resolves, as a GpuFault of kind `lost`, when `device` is lost: its reason and what Dawn said. */
export function whenLost(device: GPUDevice): Promise<GpuFault> {
  return device.lost.then((info) => new GpuFault('lost', `${info.reason}${info.message ? `, ${oneLine(info.message)}` : ''}`));
}

/** Throws, as a GpuFault, `device`'s loss, or else the first error it reported since the last call (then forgotten); nothing for a device not watched. */
export function throwGpuFault(device: GPUDevice): void {
  const watch = watches.get(device);
  if (!watch) return;
  if (watch.lost !== null) throw new GpuFault('lost', watch.lost);
  const first = watch.first;
  if (!first) return;
  const more = watch.more;
  watch.first = null;
  watch.more = 0;
  throw new GpuFault(first.kind, first.detail, more);
}

/** The values of `read`, a readback on `device`, unless the device reported an error before it settled: then that error, as a GpuFault. */
export async function readChecked<T>(device: GPUDevice, read: () => Promise<T>): Promise<T> {
  let values: T;
  try {
    values = await read();
  } catch (err) {
    throwGpuFault(device);
    throw err;
  }
  throwGpuFault(device);
  return values;
}
