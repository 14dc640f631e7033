import type * as tf from '@tensorflow/tfjs-core';
import './wasm-features';

/**
 * What the engine's WebAssembly kernels need from tfjs-wasm, in one place: the backend's
 * `WebAssembly.Memory` (the emscripten module's `asm.memory`), which a kernel module imports
 * so that it works on tensors where tfjs keeps them, and each tensor's offset in that heap
 * (the backend's `dataIdMap`). Both are tfjs-wasm internals; where they are missing,
 * instantiateOnHeap gives null and the callers fall back to tfjs ops.
 */

/** A WebAssembly.Memory: its bytes, and growing it by 64 KB pages (which detaches the old buffer). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

/** The part of the WebAssembly JS API used by the kernels (the project's TypeScript lib is es2022, without the DOM's declarations). */
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
};

/** The parts of tfjs-wasm's BackendWasm the kernels use. */
export interface WasmBackendInternals {
  wasm?: { asm?: { memory?: unknown } };
  dataIdMap: { get(dataId: object): { memoryOffset: number } | undefined };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  disposeData(dataId: object): boolean;
}

const instances = new WeakMap<Uint8Array, WeakMap<object, Record<string, unknown> | null>>();

/**
 * The exports of the kernel module `bytes` instantiated on `backend`'s heap (once per backend
 * and module), or null when the backend does not expose its memory.
 */
export function instantiateOnHeap(bytes: Uint8Array, backend: object): Record<string, unknown> | null {
  let perBackend = instances.get(bytes);
  if (!perBackend) instances.set(bytes, (perBackend = new WeakMap()));
  if (!perBackend.has(backend)) {
    const memory = (backend as WasmBackendInternals).wasm?.asm?.memory;
    perBackend.set(
      backend,
      memory instanceof WebAssembly.Memory ? new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } }).exports : null,
    );
  }
  return perBackend.get(backend) ?? null;
}

/** Where a tensor's data starts in the wasm backend's heap. */
export function heapOffset(backend: WasmBackendInternals, tensor: tf.TensorInfo): number {
  return (backend.dataIdMap.get(tensor.dataId) as { memoryOffset: number }).memoryOffset;
}

/** A tensor's float32 data where it is in the wasm backend's heap (valid until the heap next grows). */
export function heapView(backend: WasmBackendInternals, tensor: tf.TensorInfo): Float32Array {
  const memory = backend.wasm?.asm?.memory as WasmMemory;
  const size = tensor.shape.reduce((a, b) => a * b, 1);
  return new Float32Array(memory.buffer, heapOffset(backend, tensor), size);
}

/** The exports of the kernel module `bytes` instantiated on `memory`, a memory of its own (not a backend's heap). */
export function instantiateOnOwnMemory(bytes: Uint8Array, pages: number): { exports: Record<string, unknown>; memory: WasmMemory } {
  const memory = new WebAssembly.Memory({ initial: pages });
  return { exports: new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } }).exports, memory };
}
