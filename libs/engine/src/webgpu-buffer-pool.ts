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
 * buffers in a fixed order (inOrder), so that a step binds the buffers of the step before.
 */

/** What the bound uses of tfjs's BufferManager (@tensorflow/tfjs-backend-webgpu, buffer_manager.ts). */
export interface BufferManagerInternals {
  freeBuffers: Map<string, GPUBuffer[]>;
  numFreeBuffers: number;
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

/** The order in which the pool hands out its free buffers of one size: each buffer's rank, given at first sight. */
const ranks = new WeakMap<GPUBuffer, number>();
let nextRank = 0;
function rankOf(buffer: GPUBuffer): number {
  let rank = ranks.get(buffer);
  if (rank === undefined) ranks.set(buffer, (rank = nextRank++));
  return rank;
}

/**
 * Moves the buffer just pushed on `free` to its place, so that the list stays in falling rank
 * and BufferManager's pop hands out the lowest-ranked free buffer. The buffer a tensor gets then
 * depends only on which buffers are free, not on the order they came back in: a step that gives
 * back everything it took starts every time with the same free buffers and binds each of its
 * dispatches to the same buffers as the step before, so the bind groups made for it serve the
 * next (webgpu-bind-groups.ts). Handed out last in, first out, as BufferManager does, the
 * buffers of one size went round in a new order every step.
 */
function inOrder(free: GPUBuffer[]): void {
  const buffer = free[free.length - 1];
  const rank = rankOf(buffer);
  let i = free.length - 1;
  for (; i > 0 && rankOf(free[i - 1]) < rank; i--) free[i] = free[i - 1];
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
  const acquire = manager.acquireBuffer.bind(manager);
  const release = manager.releaseBuffer.bind(manager);
  manager.acquireBuffer = (size, usage, mappedAtCreation = false, reuse = true) => {
    const key = keyOf(size, usage);
    const pooled = reuse && (manager.freeBuffers.get(key)?.length ?? 0) > 0;
    const buffer = acquire(size, usage, mappedAtCreation, reuse);
    if (pooled) {
      pooledBytes -= size;
      touch(key, size);
    }
    return buffer;
  };
  manager.releaseBuffer = (buffer, reuse = true) => {
    const before = manager.numFreeBuffers;
    release(buffer, reuse);
    if (manager.numFreeBuffers > before) {
      const key = keyOf(buffer.size, buffer.usage);
      inOrder(manager.freeBuffers.get(key) as GPUBuffer[]);
      pooledBytes += buffer.size;
      touch(key, buffer.size);
      evict();
    }
  };
  bound.set(manager, pool);
  return pool;
}
