/// <reference types="@webgpu/types" />

/**
 * A bound on the GPU buffers tfjs's webgpu backend keeps for reuse. Its BufferManager puts the
 * buffer of every disposed tensor into a pool keyed by exact size and usage, and destroys none
 * of them until the backend is disposed. A training step's or a decoding step's tensors come
 * back with the same sizes every step, so the pool saves their allocations; but tensors whose
 * sizes keep changing (a KV cache that grows a column a step and is rebuilt as rows join and
 * leave, an RL batch's sequence lengths) each strand a buffer of a size that is never asked for
 * again, and a serving worker's pool grows until the GPU's memory runs out. Bounded, the pool
 * keeps at most `maxBytes` of free buffers: past that, the buffers of the size least recently
 * asked for or returned are destroyed first (a buffer still used by submitted GPU work is freed
 * once that work is done: WebGPU's destroy() waits for it). It also hands out a size's free
 * buffers in a fixed order (inOrder), so that a step binds the buffers of the step before. The
 * pool takes over BufferManager's acquireBuffer and releaseBuffer for both, keeping each buffer's
 * key and size itself (a training step acquires and releases a few thousand buffers, where each
 * of Dawn's getters is a call into its binding and tfjs searched an array a size at each release).
 */

/** What the pool takes over of tfjs's BufferManager (@tensorflow/tfjs-backend-webgpu, buffer_manager.ts). */
export interface BufferManagerInternals {
  device: GPUDevice;
  freeBuffers: Map<string, GPUBuffer[]>;
  /** The buffers handed out, by key: arrays in tfjs's own, Sets once bound here (its dispose destroys either). */
  usedBuffers: Map<string, GPUBuffer[] | Set<GPUBuffer>>;
  numFreeBuffers: number;
  numUsedBuffers: number;
  numBytesUsed: number;
  numBytesAllocated: number;
  acquireBuffer(size: number, usage: number, mappedAtCreation?: boolean, reuse?: boolean): GPUBuffer;
  releaseBuffer(buffer: GPUBuffer, reuse?: boolean): void;
}

/** The free buffers a pool holds, and its bound. */
export interface BufferPool {
  /** Bytes of free buffers the pool holds now. */
  readonly pooledBytes: number;
  /** Most bytes of free buffers it keeps; set lower, it destroys what is past it at once. */
  maxBytes: number;
}

const bound = new WeakMap<BufferManagerInternals, BufferPool>();

/** The bound the webgpu backend's pool takes when it starts (backend.ts): 2 GiB unless set. */
let startingBound = 2048 * 2 ** 20;

/** Sets the bound, in bytes, of the pool of the webgpu backend started from now on (WEBGPU_BUFFER_POOL_MB). */
export function setBufferPoolBytes(bytes: number): void {
  if (!Number.isFinite(bytes) || bytes < 0) throw new Error(`a buffer pool of ${bytes} bytes`);
  startingBound = bytes;
}

/** The bound a webgpu backend's pool takes as it starts. */
export function bufferPoolBytes(): number {
  return startingBound;
}

/** The pool's key of a buffer (BufferManager's getBufferKey). */
const keyOf = (size: number, usage: number) => `${size}_${usage}`;

/**
 * What the pool knows of each buffer: its key, its size (Dawn's getters are calls into the
 * binding) and its rank, the order in which the pool hands out its free buffers of one size,
 * given at first sight.
 */
interface Held {
  key: string;
  size: number;
  rank: number;
}
const held = new WeakMap<GPUBuffer, Held>();
let nextRank = 0;
function heldOf(buffer: GPUBuffer): Held {
  let known = held.get(buffer);
  if (!known) held.set(buffer, (known = { key: keyOf(buffer.size, buffer.usage), size: buffer.size, rank: nextRank++ }));
  return known;
}

/**
 * Puts `buffer` into `free` at its place, so that the list stays in falling rank and the pool's
 * pop hands out the lowest-ranked free buffer. The buffer a tensor gets then depends only on
 * which buffers are free, not on the order they came back in: a step that gives back everything
 * it took starts every time with the same free buffers and binds each of its dispatches to the
 * same buffers as the step before, so the bind groups made for it serve the next
 * (webgpu-bind-groups.ts). Handed out last in, first out, as tfjs's BufferManager does, the
 * buffers of one size went round in a new order every step.
 */
function inOrder(free: GPUBuffer[], buffer: GPUBuffer, rank: number): void {
  let i = free.length;
  free.push(buffer);
  for (; i > 0 && heldOf(free[i - 1]).rank < rank; i--) free[i] = free[i - 1];
  free[i] = buffer;
}

/**
 * Bounds `manager`'s pool to `maxBytes` of free buffers and keeps each size's free buffers in
 * order (once per manager: a second call sets the bound); returns the pool, whose bound may be
 * changed later.
 */
export function boundBufferPool(manager: BufferManagerInternals, maxBytes: number): BufferPool {
  const known = bound.get(manager);
  if (known) {
    known.maxBytes = maxBytes;
    return known;
  }
  // The keys that hold free buffers, least recently used first (a Map iterates in insertion order).
  const recent = new Map<string, number>();
  let pooledBytes = 0;
  for (const [key, buffers] of manager.freeBuffers) {
    if (buffers.length === 0) continue;
    recent.set(key, buffers[0].size);
    pooledBytes += buffers.reduce((sum, b) => sum + b.size, 0);
  }
  const touch = (key: string, size: number) => {
    recent.delete(key);
    if ((manager.freeBuffers.get(key)?.length ?? 0) > 0) recent.set(key, size);
  };
  let limit = maxBytes;
  // Destroys the least recently used free buffers until the pool is within its bound. Their keys
  // stay in the manager's map (empty): a buffer of that size still in use is returned to it.
  const evict = () => {
    for (const [key, size] of recent) {
      if (pooledBytes <= limit) return;
      const buffers = manager.freeBuffers.get(key) ?? [];
      while (buffers.length > 0 && pooledBytes > limit) {
        (buffers.pop() as GPUBuffer).destroy();
        manager.numFreeBuffers--;
        manager.numBytesAllocated -= size;
        pooledBytes -= size;
      }
      if (buffers.length === 0) recent.delete(key);
    }
  };
  const pool: BufferPool = {
    get pooledBytes() {
      return pooledBytes;
    },
    get maxBytes() {
      return limit;
    },
    set maxBytes(bytes: number) {
      limit = bytes;
      evict();
    },
  };
  evict();
  // The buffers handed out, a Set a key (tfjs's arrays are searched at every release).
  const usedOf = (key: string): Set<GPUBuffer> => {
    let used = manager.usedBuffers.get(key);
    if (!(used instanceof Set)) manager.usedBuffers.set(key, (used = new Set(used ?? [])));
    return used;
  };
  // BufferManager's acquireBuffer and releaseBuffer, taken over whole: the same counts kept, a
  // size's free buffers handed out lowest rank first, each buffer's key and size known here.
  manager.acquireBuffer = (size, usage, mappedAtCreation = false, reuse = true) => {
    const key = keyOf(size, usage);
    let free = manager.freeBuffers.get(key);
    if (reuse && !free) manager.freeBuffers.set(key, (free = []));
    let buffer: GPUBuffer;
    if (reuse && free && free.length > 0) {
      buffer = free.pop() as GPUBuffer;
      manager.numFreeBuffers--;
      pooledBytes -= size;
      touch(key, size);
    } else {
      buffer = manager.device.createBuffer({ size, usage, mappedAtCreation });
      held.set(buffer, { key, size, rank: nextRank++ });
      manager.numBytesAllocated += size;
    }
    usedOf(key).add(buffer);
    manager.numUsedBuffers++;
    manager.numBytesUsed += size;
    return buffer;
  };
  manager.releaseBuffer = (buffer, reuse = true) => {
    // As BufferManager: nothing to do once the manager is disposed.
    if (manager.freeBuffers.size === 0) return;
    const { key, size, rank } = heldOf(buffer);
    if (!usedOf(key).delete(buffer)) throw new Error('Cannot find the buffer in buffer manager');
    manager.numUsedBuffers--;
    manager.numBytesUsed -= size;
    if (reuse) {
      let free = manager.freeBuffers.get(key);
      if (!free) manager.freeBuffers.set(key, (free = []));
      inOrder(free, buffer, rank);
      manager.numFreeBuffers++;
      pooledBytes += size;
      touch(key, size);
      evict();
    } else {
      buffer.destroy();
      manager.numBytesAllocated -= size;
    }
  };
  bound.set(manager, pool);
  return pool;
}
