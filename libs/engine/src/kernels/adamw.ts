import * as tf from '@tensorflow/tfjs-core';
import { ADAMW_WASM } from './adamw.wasm';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';

/**
 * The optimizer's step as a WebAssembly SIMD kernel on tfjs-wasm (source:
 * libs/engine/assembly/adamw.ts), over tensors where tfjs keeps them: reading 2.4 M gradients
 * and parameters out of tfjs's heap, updating them in a JS loop and writing them back took
 * about 65 ms of a training step (docs/benchmarks.md, "Training step"). The results are the
 * bits of the JS loop in training/adamw.ts, which other backends run.
 */
const KERNEL_NAME = 'TrainyardAdamW';

/** One step's constants (training/adamw.ts states the update). */
export interface AdamWStep {
  /** Every gradient is multiplied by this first (global-norm clipping; 1 when not clipped). */
  clip: number;
  beta1: number;
  beta2: number;
  /** Bias corrections 1 - beta^t. */
  correction1: number;
  correction2: number;
  eps: number;
  learningRate: number;
  /** 1 - learningRate * weightDecay. */
  decay: number;
}

type AdamWFunction = (p: number, g: number, m: number, v: number, pOut: number, mOut: number, vOut: number, n: number, ...constants: number[]) => void;
type SumOfSquaresFunction = (g: number, n: number, from: number) => number;

function exportsFor(backend: object): Record<string, unknown> | null {
  return instantiateOnHeap(ADAMW_WASM, backend);
}

tf.registerKernel({
  kernelName: KERNEL_NAME,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { p, g, m, v } = inputs as Record<'p' | 'g' | 'm' | 'v', tf.TensorInfo>;
    const { clip, beta1, beta2, correction1, correction2, eps, learningRate, decay } = attrs as unknown as AdamWStep;
    const wasm = backend as unknown as WasmBackendInternals;
    const at = (t: tf.TensorInfo) => heapOffset(wasm, t);
    const outputs = [p, m, v].map(() => wasm.makeOutput(p.shape, 'float32'));
    const [pOut, mOut, vOut] = outputs.map(at);
    const adamw = exportsFor(backend)?.['adamw'] as AdamWFunction;
    const n = tf.util.sizeFromShape(p.shape);
    adamw(at(p), at(g), at(m), at(v), pOut, mOut, vOut, n, clip, beta1, 1 - beta1, beta2, 1 - beta2, correction1, correction2, eps, learningRate, decay);
    return outputs;
  },
});

/** Whether the kernel runs here: the wasm backend, with its heap reachable. */
export function adamwKernelAvailable(): boolean {
  return tf.getBackend() === 'wasm' && exportsFor(tf.backend()) !== null;
}

/**
 * The sum of squares of every element of float32 `tensors` on the wasm backend, in float64,
 * one element after the other (as training/adamw.ts's JS loop sums them), without reading
 * them out of tfjs's heap.
 */
export function sumOfSquares(tensors: tf.Tensor[]): number {
  const wasm = tf.backend() as unknown as WasmBackendInternals;
  const sum = exportsFor(wasm)?.['sumOfSquares'] as SumOfSquaresFunction;
  return tensors.reduce((total, t) => sum(heapOffset(wasm, t), t.size, total), 0);
}

/** One AdamW step of parameter p: its next value and next moments [p, m, v] (new tensors; the inputs are unchanged). */
export function adamwStep(p: tf.Tensor, g: tf.Tensor, m: tf.Tensor, v: tf.Tensor, step: AdamWStep): [tf.Tensor, tf.Tensor, tf.Tensor] {
  return tf.engine().runKernel(KERNEL_NAME, { p, g, m, v }, step as unknown as tf.NamedAttrMap) as unknown as [tf.Tensor, tf.Tensor, tf.Tensor];
}
