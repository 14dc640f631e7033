/// <reference types="@webgpu/types" />
import { NumberListLru } from './number-lists';

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

/** The contents as numbers: each field's type (its initial's code), its length and its values, in order. */
function contentsOf(uniforms: ProgramUniformField[]): number[] {
  const contents: number[] = [];
  for (const { type, data } of uniforms) contents.push(type.charCodeAt(0), data.length, ...data);
  return contents;
}

/** Makes `backend` keep its uniform buffers by content (once a backend; a second call returns the first). */
export function keepUniforms(backend: UniformsBackend, capacity = 4096): KeptUniforms {
  const known = keptBy.get(backend);
  if (known) return known;
  const make = backend.makeUniforms.bind(backend);
  const kept = new NumberListLru<GPUBufferBinding>(capacity, {
    // A dispatch recorded but not yet submitted may bind it: back to the pool after the submit.
    dropped: (entry) => backend.uniformPendingDisposal.push(entry.value.buffer),
  });
  backend.makeUniforms = (uniforms) =>
    kept.keep(contentsOf(uniforms), () => {
      const binding = make(uniforms);
      // Kept, not given back at the next submit: makeUniforms pushed it last.
      backend.uniformPendingDisposal.pop();
      return binding;
    });
  keptBy.set(backend, kept);
  return kept;
}

/** The uniforms `backend` keeps, if it keeps them. */
export function keptUniformsOf(backend: object): KeptUniforms | undefined {
  return keptBy.get(backend as UniformsBackend);
}
