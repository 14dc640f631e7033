import * as tf from '@tensorflow/tfjs-core';
import { GpuWeight, weightOf } from './frozen-linear.webgpu';
import { INPUT_GRADIENT_KERNEL, SOFTMAX_KERNEL } from './next-token-softmax.webgpu';
import { SOFTMAX_WASM } from './softmax.wasm';
import { heapOffset, heapView, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';
import { fusedKernelsApply } from './webgpu-program';

/**
 * The lm_head's softmax of a training step and its gradient, as two WebAssembly SIMD kernels on
 * tfjs-wasm's heap (source: libs/engine/assembly/softmax.ts, nextTokenSoftmax and
 * nextTokenGradient): one pass of exponentials over the [n, vocabulary] logits where tfjs
 * makes eight or nine, and one pass for their gradient where tfjs makes three. On webgpu the
 * softmax's kernel name runs WGSL, and the gradient is made inside the product with the
 * lm_head that follows it (next-token-softmax.webgpu.ts, nextTokenInputGradient).
 */

const GRADIENT_KERNEL = 'TrainyardNextTokenGradient';

type SoftmaxFunction = (logits: number, targets: number, exps: number, stats: number, n: number, V: number) => void;
type GradientFunction = (exps: number, stats: number, targets: number, dLogprobs: number, dLogits: number, n: number, V: number) => void;

function exportOf<T>(backend: object, name: string): T | null {
  return (instantiateOnHeap(SOFTMAX_WASM, backend)?.[name] as T | undefined) ?? null;
}

tf.registerKernel({
  kernelName: SOFTMAX_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend }) => {
    const { logits, targets } = inputs as Record<'logits' | 'targets', tf.TensorInfo>;
    const wasm = backend as unknown as WasmBackendInternals;
    const [n, V] = logits.shape;
    const exps = wasm.makeOutput([n, V], 'float32');
    const stats = wasm.makeOutput([n, 3], 'float32');
    const run = exportOf<SoftmaxFunction>(backend, 'nextTokenSoftmax') as SoftmaxFunction;
    run(heapOffset(wasm, logits), heapOffset(wasm, targets), heapOffset(wasm, exps), heapOffset(wasm, stats), n, V);
    // Each row's log p(target) and entropy from its stats, n numbers each, as the webgpu program writes them.
    const [logprobs, entropy] = [wasm.makeOutput([n], 'float32'), wasm.makeOutput([n], 'float32')];
    const [rowStats, lp, h] = [heapView(wasm, stats), heapView(wasm, logprobs), heapView(wasm, entropy)];
    for (let r = 0; r < n; r++) {
      const logSum = Math.log(rowStats[3 * r + 1]);
      lp[r] = rowStats[3 * r] - logSum;
      h[r] = logSum - rowStats[3 * r + 2];
    }
    return [exps, stats, logprobs, entropy];
  },
});

tf.registerKernel({
  kernelName: GRADIENT_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend }) => {
    const { exps, stats, targets, dLogprobs } = inputs as Record<'exps' | 'stats' | 'targets' | 'dLogprobs', tf.TensorInfo>;
    const wasm = backend as unknown as WasmBackendInternals;
    const [n, V] = exps.shape;
    const dLogits = wasm.makeOutput([n, V], 'float32');
    const run = exportOf<GradientFunction>(backend, 'nextTokenGradient') as GradientFunction;
    run(heapOffset(wasm, exps), heapOffset(wasm, stats), heapOffset(wasm, targets), heapOffset(wasm, dLogprobs), heapOffset(wasm, dLogits), n, V);
    return dLogits;
  },
});

/** What the softmax of a step's logits keeps for its gradient. */
export interface NextTokenSoftmax {
  /** log p(target) per row, [n]. */
  logprobs: tf.Tensor1D;
  /** The entropy of each row's distribution, [n]. */
  entropy: tf.Tensor1D;
  /** e^(x - max x) per logit, [n, V], and per row (x_t - max, their sum, sum e z / sum), [n, 3]: nextTokenGradient's inputs. */
  exps: tf.Tensor2D;
  stats: tf.Tensor2D;
}

function applies(logits: tf.Tensor2D): boolean {
  if (logits.dtype !== 'float32') return false;
  if (tf.getBackend() === 'webgpu') return fusedKernelsApply();
  return tf.getBackend() === 'wasm' && exportOf<SoftmaxFunction>(tf.backend(), 'nextTokenSoftmax') !== null;
}

/**
 * log p(target) and the entropy of each row of logits [n, V], keeping what the gradient needs;
 * null where the kernel does not apply (another backend, or webgpu with the engine's WGSL off or
 * under a gradient tape), for the caller to use tfjs ops. The
 * targets are int32 [n]. Not differentiable by tfjs: nextTokenLogitsGradient is its gradient.
 */
export function nextTokenSoftmax(logits: tf.Tensor2D, targets: tf.Tensor1D): NextTokenSoftmax | null {
  if (!applies(logits)) return null;
  const [exps, stats, logprobs, entropy] = tf.engine().runKernel(SOFTMAX_KERNEL, { logits, targets }) as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D, tf.Tensor1D];
  return { logprobs, entropy, exps, stats };
}

/** d loss / d logits [n, V] from nextTokenSoftmax's result and dLogprobs [n] = d loss / d log p(target), on wasm. */
export function nextTokenLogitsGradient(softmax: Pick<NextTokenSoftmax, 'exps' | 'stats'>, targets: tf.Tensor1D, dLogprobs: tf.Tensor1D): tf.Tensor2D {
  return tf.engine().runKernel(GRADIENT_KERNEL, { exps: softmax.exps, stats: softmax.stats, targets, dLogprobs }) as tf.Tensor2D;
}

/**
 * d loss / d x [n, C] through the lm_head `head`, of weight W [C, V] as webgpu's programs take it
 * (FrozenLinear.gpuWeight: [in, out] f32, or held in 16 bits as pairs), from nextTokenSoftmax's
 * result and dLogprobs [n]: dLogits W^T, its left operand made inside the product, on webgpu;
 * null elsewhere, where the caller multiplies nextTokenLogitsGradient's result.
 */
export function nextTokenInputGradient(
  softmax: Pick<NextTokenSoftmax, 'exps' | 'stats'>,
  targets: tf.Tensor1D,
  dLogprobs: tf.Tensor1D,
  head: { gpuWeight(): GpuWeight },
): tf.Tensor2D | null {
  if (tf.getBackend() !== 'webgpu' || !fusedKernelsApply()) return null;
  const { w, dtype } = weightOf(head.gpuWeight());
  const inputs = { exps: softmax.exps, stats: softmax.stats, targets, dLogprobs, w };
  return tf.engine().runKernel(INPUT_GRADIENT_KERNEL, inputs, { dtype } as unknown as tf.NamedAttrMap) as tf.Tensor2D;
}
