/// <reference types="@webgpu/types" />

/**
 * Uniform buffers kept by their contents. tfjs's webgpu backend gives every dispatch a uniform
 * buffer of its own (makeUniforms: the inputs' and output's shapes and strides, the program's
 * own values): taken from the buffer pool, written with queue.writeBuffer, given back once the
 * dispatch is submitted. A training step's dispatches ask for the same few hundred contents step
 * after step, so `keepUniforms` answers a content it has written before with the buffer that
 * holds it: no pool round trip and no write on the host, no copy on the GPU's queue, and the
 * dispatch's bind group is the one the step before made (webgpu-bind-groups.ts). A kept buffer
 * is never written again. Past `capacity` contents, the least recently used buffer goes back to
 * the pool once the work recorded now is submitted, as tfjs gives back its own.
 */

/** A uniform field as tfjs's makeUniforms takes it. */
export interface ProgramUniformField {
  type: string;
  data: number[];
}

/** What keepUniforms uses of tfjs-backend-webgpu 4.22's WebGPUBackend. */
export interface UniformsBackend {
  makeUniforms(uniforms: ProgramUniformField[]): GPUBufferBinding;
  /** The uniform buffers given back to the pool at the next submit; makeUniforms pushes each it makes. */
  uniformPendingDisposal: GPUBuffer[];
}

/** The uniform buffers a backend keeps, and how it has done. */
export interface KeptUniforms {
  readonly size: number;
  readonly hits: number;
  readonly misses: number;
}

const keptBy = new WeakMap<UniformsBackend, KeptUniforms>();

/** The contents' key: each field's type and values, in order. */
function keyOf(uniforms: ProgramUniformField[]): string {
  let key = '';
  for (const { type, data } of uniforms) key += `${type[0]}${data.join(',')};`;
  return key;
}

/** Makes `backend` keep its uniform buffers by content (once a backend; a second call returns the first). */
export function keepUniforms(backend: UniformsBackend, capacity = 4096): KeptUniforms {
  const known = keptBy.get(backend);
  if (known) return known;
  const make = backend.makeUniforms.bind(backend);
  /** Kept bindings by contents, least recently used first. */
  const kept = new Map<string, GPUBufferBinding>();
  let hits = 0;
  let misses = 0;
  backend.makeUniforms = (uniforms) => {
    const key = keyOf(uniforms);
    const found = kept.get(key);
    if (found) {
      hits++;
      kept.delete(key);
      kept.set(key, found);
      return found;
    }
    misses++;
    const binding = make(uniforms);
    // Kept, not given back at the next submit: makeUniforms pushed it last.
    backend.uniformPendingDisposal.pop();
    kept.set(key, binding);
    if (kept.size > capacity) {
      const [oldest, { buffer }] = kept.entries().next().value as [string, GPUBufferBinding];
      kept.delete(oldest);
      // A dispatch recorded but not yet submitted may bind it: back to the pool after the submit.
      backend.uniformPendingDisposal.push(buffer);
    }
    return binding;
  };
  const uniforms: KeptUniforms = {
    get size() {
      return kept.size;
    },
    get hits() {
      return hits;
    },
    get misses() {
      return misses;
    },
  };
  keptBy.set(backend, uniforms);
  return uniforms;
}

/** The uniforms `backend` keeps, if it keeps them. */
export function keptUniformsOf(backend: object): KeptUniforms | undefined {
  return keptBy.get(backend as UniformsBackend);
}
