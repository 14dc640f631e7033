import * as tf from '@tensorflow/tfjs-core';
import { ADAMW_WASM } from './adamw.wasm';
import { ADAMW_STEP_KERNEL, AdamWStepAttrs } from './adamw.webgpu';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';
import { fusedKernelsEnabled } from './webgpu-program';

/**
 * The optimizer's step as a WebAssembly SIMD kernel on tfjs-wasm (source:
 * libs/engine/assembly/adamw.ts), over tensors where tfjs keeps them: reading 2.4 M gradients
 * and parameters out of tfjs's heap, updating them in a JS loop and writing them back took
 * about 65 ms of a training step (docs/benchmarks.md, "Training step"). The results are the
 * bits of the JS loop in training/adamw.ts, which other backends run. On webgpu WGSL programs
 * (adamw.webgpu.ts) do the same in float32, Adam's moments interleaved in one tensor, and clip
 * the gradients on the GPU.
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

/** Whether the kernels run here: the wasm backend with its heap reachable, or webgpu with the engine's WGSL on. */
export function adamwKernelAvailable(): boolean {
  if (tf.getBackend() === 'webgpu') return fusedKernelsEnabled();
  return tf.getBackend() === 'wasm' && exportsFor(tf.backend()) !== null;
}

/**
 * The sum of squares of every element of float32 `tensors` on wasm, in float64, one element
 * after the other (as training/adamw.ts's JS loop sums them), without reading them out of tfjs's
 * heap.
 */
export function sumOfSquares(tensors: tf.Tensor[]): number {
  const wasm = tf.backend() as unknown as WasmBackendInternals;
  const sum = exportsFor(wasm)?.['sumOfSquares'] as SumOfSquaresFunction;
  return tensors.reduce((total, t) => sum(heapOffset(wasm, t), t.size, total), 0);
}

/**
 * How the kernels here keep a parameter's moments: `separate`, m and v tensors of its shape (wasm:
 * adamwStep); `interleaved`, one flat tensor [2 * size] of m and v in turn (webgpu:
 * adamwStepOnGpu).
 */
export function adamwMomentLayout(): 'separate' | 'interleaved' {
  return tf.getBackend() === 'webgpu' ? 'interleaved' : 'separate';
}

/**
 * One AdamW step of every parameter on webgpu, gradients clipped to a global norm of
 * `maxGradNorm` (0: not clipped) on the GPU: each parameter's next value (a new tensor), its
 * moments `mv` (interleaved, [2 * size], the caller's alone) updated in place, and `stats`,
 * [sum of the gradients' squares, clipping scale], to read back once the step is recorded
 * (adamw.webgpu.ts).
 */
export function adamwStepOnGpu(parameters: { p: tf.Tensor; g: tf.Tensor; mv: tf.Tensor }[], step: Omit<AdamWStep, 'clip'>, maxGradNorm: number): { next: tf.Tensor[]; stats: tf.Tensor } {
  const inputs = Object.fromEntries(parameters.flatMap(({ p, g, mv }, j) => [[`p${j}`, p], [`g${j}`, g], [`mv${j}`, mv]]));
  const attrs: AdamWStepAttrs = { ...step, maxGradNorm };
  const outputs = tf.engine().runKernel(ADAMW_STEP_KERNEL, inputs, attrs as unknown as tf.NamedAttrMap) as unknown as tf.Tensor[];
  return { next: outputs.slice(0, -1), stats: outputs[outputs.length - 1] };
}

/** One AdamW step of parameter p on wasm: its next value and next moments [p, m, v] (new tensors; the inputs are unchanged). */
export function adamwStep(p: tf.Tensor, g: tf.Tensor, m: tf.Tensor, v: tf.Tensor, step: AdamWStep): [tf.Tensor, tf.Tensor, tf.Tensor] {
  return tf.engine().runKernel(KERNEL_NAME, { p, g, m, v }, step as unknown as tf.NamedAttrMap) as unknown as [tf.Tensor, tf.Tensor, tf.Tensor];
}
