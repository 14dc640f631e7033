import * as tf from '@tensorflow/tfjs-core';
import type { AttentionKernels } from './attention-kernels';
import { ATTENTION_WASM } from './attention.wasm';
import { DECODE_ATTENTION_KERNEL, MAX_HEAD_DIM } from './decode-attention.webgpu';
import { runningMatMulThreads } from './matmul';
import type { MatMulThreads } from './matmul-threads';
import { heapOffset, heapView, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';
import { fusedKernelsApply } from './webgpu-program';

/**
 * Attention for a decoding step as one WebAssembly SIMD kernel on tfjs-wasm (source:
 * libs/engine/assembly/attention.ts, which prompts run too: prompt-attention.ts). tfjs-wasm runs batched matMuls, which decoding
 * attention is made of (many small [G, D] x [D, S] products, one per sequence and KV head),
 * as a scalar loop; this kernel computes softmax(q k^T + mask) v for all of them in one
 * call, several times faster per layer (docs/benchmarks.md), and fuses the mask and the softmax.
 *
 * It is registered as a tfjs kernel for the wasm backend and runs on tfjs's own memory: the
 * module imports the backend's WebAssembly.Memory and is given the heap offsets of the
 * input tensors and of a fresh output tensor (wasm-heap.ts); where tfjs-wasm does not expose
 * them, decodeAttention returns null and the caller uses tfjs ops. On webgpu the same kernel
 * name runs a WGSL program (decode-attention.webgpu.ts).
 */
const KERNEL_NAME = DECODE_ATTENTION_KERNEL;

/**
 * A prompt's attention, and its gradient, is divided between the matmul threads from this many
 * multiply-adds (B KV G T S D: every query row against every key, twice, half of them past the
 * causal mask). Below it, copying the operands in and out and waking the helpers cost more than
 * the helpers save: on an AMD Zen 4 with SmolLM2-135M's heads, 2 threads took 0.63-0.92 times
 * one thread's speed at 128 tokens (9.4 million) and 1.09-1.23 times at 256 (37.7 million)
 * (bench/prompt-attention.bench.ts; docs/benchmarks.md, "Attention kernel").
 */
const THREADED_ATTENTION_MIN_MACS = 1 << 25;

/** The matmul threads to divide attention over T new tokens between, or null to run it on this thread (THREADED_ATTENTION_MIN_MACS). */
export function attentionThreads(B: number, KV: number, G: number, T: number, S: number, D: number): MatMulThreads | null {
  return B * KV * G * T * S * D >= THREADED_ATTENTION_MIN_MACS ? runningMatMulThreads() : null;
}

/** The kernel instantiated on this backend's memory, or null when the backend does not expose it. */
export function attentionKernelFor(backend: object): AttentionKernels | null {
  return instantiateOnHeap(ATTENTION_WASM, backend) as AttentionKernels | null;
}

/**
 * Runs the kernel for a tfjs kernel function on wasm: q and the output token-major
 * ([B, T, KV, G, D] in any shape of that size), k and v [B, KV, stride, D] of which the first
 * S columns count (a KV cache's spare columns follow them), mask [B or 1, 1, T, S];
 * G query heads per KV head. Decoding (here) and prompts (prompt-attention.ts) both call it:
 * one token per sequence takes `attention`, its scratch one token's scores ([G, S]); several
 * take `promptAttention`'s register tiles where D is a multiple of 8, its scratch every head's
 * keys transposed (transposeKeys) and a tile's 4 rows of scores ([B KV D + 4, S rounded up to
 * 8]), divided between the matmul threads while they run and the work is large enough
 * (attentionThreads; matmul-threads.ts, runPromptAttention: the same bits).
 */
export function runAttentionKernel(backend: object, inputs: Record<'q' | 'k' | 'v' | 'mask', tf.TensorInfo>, T: number, kvHeads: number, G: number): tf.TensorInfo {
  const { q, k, v, mask } = inputs;
  const wasm = backend as unknown as WasmBackendInternals;
  const [B, , stride, D] = k.shape;
  const S = mask.shape[3];
  const tiled = T > 1 && D % 8 === 0;
  const out = wasm.makeOutput(q.shape, 'float32');
  const threads = tiled ? attentionThreads(B, kvHeads, G, T, S, D) : null;
  if (threads) {
    const view = (t: tf.TensorInfo) => heapView(wasm, t);
    threads.runPromptAttention({ q: view(q), k: view(k), v: view(v), mask: view(mask), out: view(out), B, KV: kvHeads, G, T, S, D, maskRows: mask.shape[0], stride });
    return out;
  }
  const kernels = attentionKernelFor(backend) as AttentionKernels;
  const heads = B * kvHeads;
  const S8 = Math.ceil(S / 8) * 8;
  const scratch = wasm.makeOutput(tiled ? [heads * D + 4, S8] : [G, S], 'float32');
  const at = (t: tf.TensorInfo) => heapOffset(wasm, t);
  try {
    if (tiled) {
      kernels.transposeKeys(at(k), at(scratch), heads, S, stride, D);
      const rest = [at(v), at(mask), at(scratch) + 4 * heads * D * S8, at(out), B, kvHeads, G, T, S, D, mask.shape[0], stride] as const;
      kernels.promptAttention(at(q), at(scratch), ...rest, 0, kernels.promptAttentionTiles(B, kvHeads, G, T), 0);
    } else {
      kernels.attention(at(q), at(k), at(v), at(mask), at(scratch), at(out), B, kvHeads, G, T, S, D, mask.shape[0], stride);
    }
  } finally {
    wasm.disposeData(scratch.dataId);
  }
  return out;
}

tf.registerKernel({
  kernelName: KERNEL_NAME,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { kvHeads } = attrs as unknown as { kvHeads: number };
    const q = (inputs as Record<'q', tf.TensorInfo>).q;
    return runAttentionKernel(backend, inputs as Record<'q' | 'k' | 'v' | 'mask', tf.TensorInfo>, 1, kvHeads, q.shape[1]);
  },
});

/** True when decodeAttention runs the kernel on the current backend. */
export function decodeAttentionKernelAvailable(): boolean {
  return tf.getBackend() === 'wasm' && attentionKernelFor(tf.backend()) !== null;
}

/**
 * softmax(q k^T + mask) v for one decoding step, in the grouped-query layout of model/llama.ts:
 * q [B*KV, G, D] (already scaled by 1/sqrt(D)), k and v [B, KV, S, D], mask [B, 1, 1, S]
 * additive (0 or KVCache's MASKED) -> [B*KV, G, D]. On wasm k and v may hold more columns than
 * the mask's S (a KV cache's spare ones, model/kv-cache.ts): only the first S count. Null where
 * the kernel does not apply (another backend, fused webgpu kernels off, D not a multiple of 4
 * on wasm or over MAX_HEAD_DIM on webgpu, not float32, a mask not per sequence, spare columns
 * off wasm): compute it with tfjs ops then. No gradient: decoding only.
 */
export function decodeAttention(q: tf.Tensor3D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D): tf.Tensor3D | null {
  const [B, KV, stride, D] = k.shape;
  const S = mask.shape[3];
  const wasm = decodeAttentionKernelAvailable() && D % 4 === 0;
  if (!wasm && !(fusedKernelsApply() && D <= MAX_HEAD_DIM && stride === S)) return null;
  if ([q, k, v, mask].some((t) => t.dtype !== 'float32')) return null;
  if (q.shape[0] !== B * KV || q.shape[2] !== D || !sameShape(v.shape, k.shape)) {
    throw new Error(`decodeAttention: shapes q ${q.shape}, k ${k.shape} and v ${v.shape} do not fit together`);
  }
  // One mask row per sequence; a mask broadcast over the batch is left to tfjs.
  if (!sameShape(mask.shape, [B, 1, 1, S]) || S > stride) return null;
  return tf.engine().runKernel(KERNEL_NAME, { q, k, v, mask }, { kvHeads: KV }) as tf.Tensor3D;
}

function sameShape(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((n, i) => n === b[i]);
}
