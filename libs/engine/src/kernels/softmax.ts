import { SOFTMAX_WASM } from './softmax.wasm';
import { instantiateOnOwnMemory, WasmMemory } from './wasm-heap';

/**
 * The exponentials a sampler needs from one row of logits, in WebAssembly SIMD (source:
 * libs/engine/assembly/softmax.ts): about ten times faster than Math.exp over the vocabulary
 * (docs/benchmarks.md, "Sampling"). The module has a memory of its own, grown to the largest
 * row seen; each call copies the row in.
 */
export interface Exponentials {
  /**
   * exp((logits[i] - max) / temperature) for every i: in [0, 1], 0 for -Infinity. A view of
   * the kernel's memory, overwritten by the next call: use it, or copy it, before then.
   */
  values: Float32Array;
  /** The largest logit (-Infinity when all are). */
  max: number;
  /** The sum of `values`, computed in float64. */
  sum: number;
}

interface SoftmaxKernel {
  memory: WasmMemory;
  largest(x: number, n: number): number;
  exponentiate(x: number, n: number, m: number, scale: number): number;
}

const PAGE_BYTES = 1 << 16;
let kernel: SoftmaxKernel | undefined;

function instance(): SoftmaxKernel {
  if (!kernel) {
    const { exports, memory } = instantiateOnOwnMemory(SOFTMAX_WASM, 4);
    kernel = {
      memory,
      largest: exports['largest'] as SoftmaxKernel['largest'],
      exponentiate: exports['exponentiate'] as SoftmaxKernel['exponentiate'],
    };
  }
  return kernel;
}

/** exp((logits[i] - max) / temperature) for every i, their sum and max; temperature > 0. */
export function exponentials(logits: Float32Array, temperature: number): Exponentials {
  const k = instance();
  const bytes = logits.length * 4;
  if (k.memory.buffer.byteLength < bytes) k.memory.grow(Math.ceil((bytes - k.memory.buffer.byteLength) / PAGE_BYTES));
  const values = new Float32Array(k.memory.buffer, 0, logits.length);
  values.set(logits);
  const max = k.largest(0, logits.length);
  if (max === -Infinity) return { values: values.fill(0), max, sum: 0 };
  const sum = k.exponentiate(0, logits.length, max, 1 / temperature);
  return { values, max, sum };
}
