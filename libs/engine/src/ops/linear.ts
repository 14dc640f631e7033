import * as tf from '@tensorflow/tfjs-core';
import { frozenLinear } from '../kernels/frozen-linear.webgpu';
import { addLoraDeltas, LoraPart, loraKernelsApply, projectWithLora } from '../kernels/lora';
import { loraForwardOnWebGpu, loraKernelsApplyOnWebGpu, WebGpuLoraPart } from '../kernels/lora.webgpu';
import { packedMatMul, type PackedWeights } from '../kernels/matmul';
import { fusedKernelsApply } from '../kernels/webgpu-program';
import type { FrozenLinear, LowRankAdapter } from '../model/linear';
import { outputSlot, outputStoreActive } from './kept-outputs';
import { adaptedProjectionWithGradient, frozenProjectionWithGradient, sharedScale } from './linear-gradient';
import { savedActivations } from './saved-activations';

/**
 * FrozenLinear.forward, x W^T + b plus the adapters' deltas, by the implementation that fits
 * the backend and the pass:
 *
 * | pass | wasm | elsewhere |
 * |---|---|---|
 * | inference | the packed-weight kernel (kernels/matmul.ts; f32, bf16 or q8 panels, on the matmul threads where they run), low-rank adapters' deltas added by the LoRA kernel (kernels/lora.ts) | on webgpu the engine's tiled product where its kernels apply (kernels/frozen-linear.webgpu.ts; a weight held in 16 bits always), else tf.matMul; each adapter's own forward |
 * | training, low-rank adapters | the product and every delta in one kernel call, under one custom gradient with the LoRA backward kernel (ops/linear-gradient.ts) | webgpu outside a tape: two WGSL dispatches (kernels/lora.webgpu.ts), x A saved for the explicit backward; else tfjs ops under the same custom gradient, its backward written out |
 * | training, no adapter | the packed kernel, with dx from the same panels | on webgpu the engine's tiled products both ways, else tf.matMul, dx by a plain 2-D matMul |
 *
 * On wasm, inference and training multiply by the same kernel and get the same products. The
 * training routes take an output that an activation-checkpointed step kept for them
 * (ops/kept-outputs.ts). In a pass that saves activations for an explicit backward
 * (ops/saved-activations.ts) a projection being trained through saves its input x, which
 * linearBackward (ops/linear-gradient.ts) reads.
 */
export function linear(l: FrozenLinear, x: tf.Tensor2D): tf.Tensor2D {
  if (l.backwardEnabled) savedActivations()?.saveLinearInput(l, x);
  const lowRank = l.backwardEnabled && l.hasAdapters ? l.lowRankAdapters() : null;
  if (lowRank) return adaptedOnWebGpu(l, x, lowRank) ?? adaptedForTraining(l, x, lowRank);
  const y = l.backwardEnabled ? frozenProjectionWithGradient(l, x, (input) => trainingValue(l, input, () => frozenProduct(l, input))) : frozenProduct(l, x);
  return l.hasAdapters ? addAdapters(l, x, y) : y;
}

/**
 * The projection's weight, bias and low-rank adapters as the WebAssembly kernels take them,
 * for kernels that run several steps in one call (ops/decoder-block.ts), for an input of
 * `tokens` rows; null where the product is something else (backward enabled, another backend,
 * an adapter that is neither low-rank nor routed low-rank ones).
 */
export function packedProjection(l: FrozenLinear, tokens: number): { packed: PackedWeights; bias: tf.Tensor1D | null; lora: LoraPart[] } | null {
  if (l.backwardEnabled) return null;
  const packed = l.packedWeights();
  const lora = l.adapterParts(tokens);
  return packed && lora ? { packed, bias: l.bias, lora } : null;
}

/**
 * x W^T + b: for a weight held in 16 bits, webgpu's program that reads it (frozenLinear); else the
 * packed kernel where it applies (wasm, no gradient being recorded: inside a custom gradient's
 * forward function none is), else on webgpu the same program over the f32 weight where the
 * engine's kernels apply, else tfjs ops.
 */
function frozenProduct(l: FrozenLinear, x: tf.Tensor2D): tf.Tensor2D {
  const half = l.halfWeight;
  if (half) return frozenLinear(x, half, l.bias);
  const packed = l.packedWeights();
  const product = packed && packedMatMul(x, packed, l.bias, l.matmulPlan);
  if (product) return product;
  return fusedKernelsApply() ? frozenLinear(x, l.weightT, l.bias) : l.product(x);
}

/** y plus the adapters' deltas: every low-rank one in one LoRA kernel call where it applies (wasm, no gradient being recorded), else each adapter's own forward. */
function addAdapters(l: FrozenLinear, x: tf.Tensor2D, y: tf.Tensor2D): tf.Tensor2D {
  const parts = tf.engine().isTapeOn() ? null : l.adapterParts(x.shape[0]);
  if (parts && loraKernelsApply(x, parts)) return addLoraDeltas(y, x, parts);
  return tf.add(y, l.adapterDeltas(x));
}

/**
 * Training with low-rank adapters on webgpu outside a tape (a training step's one forward pass,
 * or log-probs read as values): the product and the deltas by the LoRA programs, and in a pass
 * that saves activations their x A saved beside x for linearBackward. Null where the programs do
 * not apply, or where an activation-checkpointed pass keeps outputs by their order
 * (ops/kept-outputs.ts): its recompute runs the generic route, slot for slot.
 */
function adaptedOnWebGpu(l: FrozenLinear, x: tf.Tensor2D, adapters: (LowRankAdapter | undefined)[]): tf.Tensor2D | null {
  if (outputStoreActive()) return null;
  const parts = webGpuLoraParts(l, adapters);
  const result = parts && loraForwardOnWebGpu(x, l.gpuWeight(), l.bias, parts);
  if (!result) return null;
  savedActivations()?.saveAdapterProduct(l, result.h);
  return result.y;
}

/** Columns of the x A that linear saves for a projection in a pass saving activations (its adapters' ranks together where the LoRA programs run it), 0 where it saves none. */
export function savedAdapterColumns(l: FrozenLinear): number {
  const adapters = l.backwardEnabled && l.hasAdapters ? l.lowRankAdapters() : null;
  const parts = adapters && webGpuLoraParts(l, adapters);
  if (!parts || outputStoreActive() || !loraKernelsApplyOnWebGpu(parts[0].aT, parts)) return 0;
  return parts.reduce((sum, p) => sum + p.aT.shape[1], 0);
}

/** The adapters as the webgpu LoRA programs take them, with the output columns of their parts; null where a scale is not known as a number. */
export function webGpuLoraParts(l: FrozenLinear, adapters: (LowRankAdapter | undefined)[]): WebGpuLoraPart[] | null {
  const parts: WebGpuLoraPart[] = [];
  let col = 0;
  for (const [i, part] of l.parts.entries()) {
    const a = adapters[i];
    if (a) {
      const scale = a.scaleFactor ? a.scaleValue : 1;
      if (scale === undefined) return null;
      parts.push({ aT: a.aT, bT: a.bT, scale, col, width: part.outFeatures });
    }
    col += part.outFeatures;
  }
  return parts;
}

/** Training with low-rank adapters: the product and the deltas as one differentiable op, on the LoRA kernels where they apply (one call per pass). */
function adaptedForTraining(l: FrozenLinear, x: tf.Tensor2D, adapters: (LowRankAdapter | undefined)[]): tf.Tensor2D {
  const parts = l.adapterParts(x.shape[0]) as LoraPart[];
  const kernelParts = loraKernelsApply(x, parts) ? parts : null;
  return adaptedProjectionWithGradient(l, x, adapters, kernelParts, (input) =>
    trainingValue(l, input, () => (kernelParts ? productWithLoraKernels(l, input, kernelParts) : productWithAdapters(l, input, adapters))),
  );
}

/** x W^T + b plus the deltas of `parts` on the LoRA kernels: in one call with the packed product where it applies, else after frozenProduct's. */
function productWithLoraKernels(l: FrozenLinear, x: tf.Tensor2D, parts: LoraPart[]): tf.Tensor2D {
  const packed = l.packedWeights();
  return (packed && projectWithLora(x, packed, l.bias, l.matmulPlan, parts)) ?? tf.tidy(() => addLoraDeltas(frozenProduct(l, x), x, parts));
}

/** x W^T + b plus the low-rank adapters' deltas with tfjs ops (undefined: no adapter on that part). */
function productWithAdapters(l: FrozenLinear, x: tf.Tensor2D, adapters: (LowRankAdapter | undefined)[]): tf.Tensor2D {
  // A scale the adapters share multiplies their deltas side by side once, not each one.
  const shared = sharedScale(adapters);
  const deltas = adapters.map((a, i) => (a ? lowRankDelta(x, a, shared === undefined) : tf.zeros([x.shape[0], l.parts[i].outFeatures])));
  const delta = deltas.length === 1 ? deltas[0] : tf.concat(deltas, 1);
  return tf.add(frozenProduct(l, x), shared ? tf.mul(delta, shared) : delta);
}

/** A low-rank adapter's delta, (x aT) bT, times its scale when `scaled`. */
function lowRankDelta(x: tf.Tensor2D, a: LowRankAdapter, scaled: boolean): tf.Tensor2D {
  const delta = tf.matMul(tf.matMul(x, a.aT), a.bT) as tf.Tensor2D;
  return scaled && a.scaleFactor ? (tf.mul(delta, a.scaleFactor) as tf.Tensor2D) : delta;
}

/** A training pass's value of the projection: zeros where the pass never reads it, the one an earlier pass kept, else `compute()` (offered to be kept). */
function trainingValue(l: FrozenLinear, x: tf.Tensor2D, compute: () => tf.Tensor2D): tf.Tensor2D {
  const slot = outputSlot(l);
  if (slot?.unread) return tf.zeros([x.shape[0], l.outFeatures]);
  const kept = slot?.take();
  if (kept) return kept;
  const value = compute();
  slot?.keep(value);
  return value;
}
