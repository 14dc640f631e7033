/// <reference types="@webgpu/types" />
import { util } from '@tensorflow/tfjs-core';
import type { BufferManagerInternals } from './webgpu-buffer-pool';

/**
 * Host values uploaded with `queue.writeBuffer`. tfjs's webgpu backend uploads a tensor's host
 * values (uploadToGPU) into a buffer from its pool through a staging buffer it creates mapped,
 * fills, unmaps, copies from in its command encoder and destroys after the submit: a
 * createBuffer and a destroy an upload, 15 a LoRA SFT step (the tokens' embeddings, the loss's
 * weights, the rows' masks). `writeBuffer` stages the values in Dawn's own reused memory and
 * writes them at the queue's next submit, ahead of the command buffer recorded meanwhile, which
 * is where the tensor's first reader is. No command recorded and not yet submitted touches a
 * buffer the pool hands out: tfjs gives back a buffer that such a command binds only at the
 * submit (its commandQueueOwnedIds), as the engine's own recordings do (webgpu-program.ts).
 */

/** What uploadsByWriteBuffer uses of tfjs-backend-webgpu 4.22's WebGPUBackend. */
export interface UploadsBackend {
  queue: GPUQueue;
  bufferManager: BufferManagerInternals;
  tensorMap: { get(dataId: object): { values: ArrayLike<number> | null; dtype: string; shape: number[]; resource: unknown } | undefined };
  uploadToGPU(dataId: object): void;
}

const patched = new WeakSet<UploadsBackend>();

/** Makes `backend` upload host values with writeBuffer (once a backend). */
export function uploadsByWriteBuffer(backend: UploadsBackend): void {
  if (patched.has(backend)) return;
  patched.add(backend);
  const upload = backend.uploadToGPU.bind(backend);
  backend.uploadToGPU = (dataId) => {
    const data = backend.tensorMap.get(dataId);
    // Already on the GPU, as nearly every input and output of a dispatch is (tfjs asks for each
    // at every dispatch, thousands of times a training step): nothing to do, as tfjs's does nothing.
    if (data?.resource != null) return;
    // No values to write (tfjs acquires an empty buffer), none at all, or a kind (complex,
    // string) tfjs does not upload this way: tfjs's own.
    const count = data ? util.sizeFromShape(data.shape) : 0;
    if (!data || !data.values || count === 0 || !(data.dtype === 'float32' || data.dtype === 'int32' || data.dtype === 'bool')) return upload(dataId);
    const buffer = backend.bufferManager.acquireBuffer(4 * count, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST);
    const values = data.dtype === 'float32' ? toTyped(data.values, Float32Array) : toTyped(data.values, Int32Array);
    backend.queue.writeBuffer(buffer, 0, values.buffer, values.byteOffset, 4 * count);
    // Once uploaded, tfjs keeps no copy on the host.
    data.values = null;
    data.resource = buffer;
  };
}

/** `values` as the typed array `Type` (a copy only where they are held otherwise). */
function toTyped<T extends Float32Array | Int32Array>(values: ArrayLike<number>, Type: { new (values: ArrayLike<number>): T }): T {
  return values instanceof Type ? values : new Type(values);
}
