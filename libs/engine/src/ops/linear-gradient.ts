import * as tf from '@tensorflow/tfjs-core';
import type { HiddenAct } from '../config';
import { frozenLinearTransposed } from '../kernels/frozen-linear.webgpu';
import { LoraPart, loraGradients, loraGradientsOnThreads, loraKernelsApply } from '../kernels/lora';
import { loraBackwardOnWebGpu } from '../kernels/lora.webgpu';
import { splitColumns } from '../kernels/matmul';
import { packedMatMulTransposed, packedMatMulTransposedAlongside } from '../kernels/matmul-transposed';
import { fusedKernelsApply } from '../kernels/webgpu-program';
import type { FrozenLinear, LowRankAdapter } from '../model/linear';
import { webGpuLoraParts } from './linear';

/**
 * The gradients of a frozen projection (model/linear.ts) for training, as custom gradients
 * (tf.customGrad) around the value ops/linear.ts computes.
 *
 * The weight is frozen: only the input gets a gradient, dx = dy W. On wasm it comes from the
 * packed panels the forward product multiplies by (kernels/matmul-transposed.ts), faster than
 * XNNPACK at training's row counts (docs/benchmarks.md, "Training step"), and XNNPACK never
 * packs a copy of its own; while matmul threads run, it is divided between them. Elsewhere
 * dx = (W^T dy^T)^T, a plain 2-D matMul with the stored [in, out] weight as the left operand
 * and dy^T (small: [out, tokens]) as the right one, plus two cheap transposes of activations:
 * no second [out, in] copy of the weights is kept.
 */

/** value(x), the projection's output, as a differentiable op of x with the gradient dx = dy W. */
export function frozenProjectionWithGradient(l: FrozenLinear, x: tf.Tensor2D, value: (x: tf.Tensor2D) => tf.Tensor2D): tf.Tensor2D {
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => ({
    value: value(args[0] as tf.Tensor2D),
    gradFunc: (dy: tf.Tensor | tf.Tensor[]) => inputGradient(l, dy as tf.Tensor2D),
  }));
  return f(x) as tf.Tensor2D;
}

/**
 * value(x), the projection's output with its low-rank adapters' deltas, as one differentiable
 * op of x and of each adapter's factors (aT, bT in the parts' order). The backward pass is
 * written out by hand: inside a custom gradient tfjs records nothing on its tape, so none of
 * the ~10 intermediate tensors per projection is copied for the backward pass (the wasm
 * backend copies every saved tensor), and only x is kept. With `kernelParts` (the adapters as
 * the LoRA kernels take them, where they apply) the adapters' backward is one kernel call
 * (kernels/lora.ts); otherwise tfjs ops.
 */
export function adaptedProjectionWithGradient(
  l: FrozenLinear,
  x: tf.Tensor2D,
  adapters: (LowRankAdapter | undefined)[],
  kernelParts: LoraPart[] | null,
  value: (x: tf.Tensor2D) => tf.Tensor2D,
): tf.Tensor2D {
  const factors = adapters.flatMap((a) => (a ? [a.aT, a.bT] : []));
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const input = args[0] as tf.Tensor2D;
    const save = args[args.length - 1] as tf.GradSaveFunc;
    save([input]);
    return {
      value: value(input),
      gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => tf.tidy(() => adaptedProjectionGradient(l, saved[0] as tf.Tensor2D, dy as tf.Tensor2D, adapters, kernelParts)),
    };
  });
  return f(x, ...factors) as tf.Tensor2D;
}

/**
 * The gradients of a projection with low-rank adapters from its input x and its output's
 * gradient dy: [dx, then daT and dbT of each adapter present, in the parts' order]. With
 * h = x aT and gs = s dy_part (s the adapter's scale), delta = s h bT gives
 *
 *   dbT = h^T gs,   dh = gs bT^T,   daT = x^T dh,   dx = dy W + sum of dh aT^T
 *
 * From the LoRA kernels where `kernelParts` is given (kernels/lora.ts), else tfjs ops.
 */
function adaptedProjectionGradient(l: FrozenLinear, xs: tf.Tensor2D, g: tf.Tensor2D, adapters: (LowRankAdapter | undefined)[], kernelParts: LoraPart[] | null): tf.Tensor[] {
  if (kernelParts) {
    // From DIVIDED_BACKWARD_THREADS matmul threads: the frozen dx and the adapters' backward
    // divided between them, in one call.
    const packed = l.packedWeights();
    const divided = packed && loraGradientsOnThreads(xs, g, packed, kernelParts);
    if (divided) return [divided.dx, ...divided.grads];
    // Elsewhere the adapters' gradients need no frozen dx: they run on this thread
    // while any matmul threads compute it, and their share of dx is added after.
    const { dx, result } = inputGradientAlongside(l, g, () => loraGradients(xs, g, kernelParts));
    return [tf.add(dx, result.dx), ...result.grads];
  }
  const sizes = l.parts.map((p) => p.outFeatures);
  let dx = inputGradient(l, g);
  // A scale the adapters share multiplies dy once, before it is split between them.
  const shared = sharedScale(adapters);
  const scaled = shared ? (tf.mul(g, shared) as tf.Tensor2D) : g;
  const gs = sizes.length === 1 ? [scaled] : splitColumns(scaled, sizes);
  const grads: tf.Tensor[] = [];
  adapters.forEach((a, i) => {
    if (!a) return;
    const gScaled = shared === undefined && a.scaleFactor ? (tf.mul(gs[i], a.scaleFactor) as tf.Tensor2D) : gs[i];
    const h = product(xs, a.aT, false, false);
    const dbT = product(h, gScaled, true, false);
    const dh = product(gScaled, a.bT, false, true);
    const daT = product(xs, dh, true, false);
    dx = tf.add(dx, product(dh, a.aT, false, true));
    grads.push(daT, dbT);
  });
  return [dx, ...grads];
}

/** The scale every adapter present shares (LoraAttachment's alpha / r), null where none has one, undefined where they differ. */
export function sharedScale(adapters: (LowRankAdapter | undefined)[]): tf.Scalar | null | undefined {
  const scales = new Set(adapters.flatMap((a) => (a ? [a.scaleFactor] : [])));
  return scales.size > 1 ? undefined : ([...scales][0] ?? null);
}

/**
 * The explicit backward of linear (ops/linear.ts) without a tape, from the input x it saved and
 * its output's gradient dy: dx, and the gradient of each low-rank adapter's factors by the
 * factor (aT, bT: the trained variables). The same maths, and kernels, as the custom gradients
 * above; on webgpu, where the forward saved its adapters' x A (`xa`), the LoRA programs
 * (kernels/lora.webgpu.ts).
 */
export function linearBackward(l: FrozenLinear, x: tf.Tensor2D, dy: tf.Tensor2D, xa: tf.Tensor2D | null = null): { dx: tf.Tensor2D; grads: Map<tf.Tensor, tf.Tensor> } {
  const onWebGpu = xa && linearBackwardOnWebGpu(l, x, dy, xa, null);
  if (onWebGpu) return onWebGpu;
  const grads = new Map<tf.Tensor, tf.Tensor>();
  if (!l.hasAdapters) return { dx: inputGradient(l, dy), grads };
  const adapters = l.lowRankAdapters();
  if (!adapters) throw new Error(`${l.parts.map((p) => p.name).join('|')}: an explicit backward needs low-rank adapters`);
  const parts = l.adapterParts(x.shape[0]) as LoraPart[];
  const kernelParts = loraKernelsApply(x, parts) ? parts : null;
  const [dx, ...factorGrads] = adaptedProjectionGradient(l, x, dy, adapters, kernelParts);
  adapters
    .filter((a): a is LowRankAdapter => a !== undefined)
    .forEach((a, i) => {
      grads.set(a.aT, factorGrads[2 * i]);
      grads.set(a.bT, factorGrads[2 * i + 1]);
    });
  return { dx: dx as tf.Tensor2D, grads };
}

/**
 * linearBackward for the MLP's down projection `l` whose input was the gated activation of
 * gateUp (SwiGLU or GeGLU, `activation`): d gateUp through it (ops/swiglu.ts, ops/gelu.ts)
 * instead of dx, where the webgpu LoRA programs compute both in one dispatch; null elsewhere,
 * for the caller to run the two backwards apart.
 */
export function linearBackwardThroughGate(
  l: FrozenLinear,
  x: tf.Tensor2D,
  dy: tf.Tensor2D,
  xa: tf.Tensor2D | null,
  gateUp: tf.Tensor2D,
  activation: HiddenAct,
): { dx: tf.Tensor2D; grads: Map<tf.Tensor, tf.Tensor> } | null {
  return xa && linearBackwardOnWebGpu(l, x, dy, xa, { gateUp, activation });
}

/** linearBackward by the webgpu LoRA programs (with the gated activation's backward given `gate`), or null where they do not apply. */
function linearBackwardOnWebGpu(
  l: FrozenLinear,
  x: tf.Tensor2D,
  dy: tf.Tensor2D,
  xa: tf.Tensor2D,
  gate: { gateUp: tf.Tensor2D; activation: HiddenAct } | null,
): { dx: tf.Tensor2D; grads: Map<tf.Tensor, tf.Tensor> } | null {
  const adapters = l.hasAdapters ? l.lowRankAdapters() : null;
  const parts = adapters && webGpuLoraParts(l, adapters);
  const result = parts && loraBackwardOnWebGpu(x, xa, dy, l.gpuWeight(), parts, gate);
  if (!parts || !result) return null;
  const grads = new Map<tf.Tensor, tf.Tensor>();
  parts.forEach((p, i) => {
    grads.set(p.aT, result.grads[i][0]);
    grads.set(p.bT, result.grads[i][1]);
  });
  return { dx: result.dx, grads };
}

/**
 * dx = dy W [tokens, in], the frozen projection's gradient w.r.t. its input (adapters not
 * included): from the packed panels on wasm, else (W^T dy^T)^T, a plain 2-D matMul against
 * the one stored [in, out] copy.
 */
export function inputGradient(l: FrozenLinear, dy: tf.Tensor2D): tf.Tensor2D {
  const packed = l.packedWeights();
  return (packed && packedMatMulTransposed(dy, packed)) ?? inputGradientWithOps(l, dy);
}

/** inputGradient(dy) and `meanwhile()`, at once where the matmul threads compute dx (packedMatMulTransposedAlongside). */
function inputGradientAlongside<T>(l: FrozenLinear, dy: tf.Tensor2D, meanwhile: () => T): { dx: tf.Tensor2D; result: T } {
  const packed = l.packedWeights();
  return (packed && packedMatMulTransposedAlongside(dy, packed, meanwhile)) ?? { dx: inputGradientWithOps(l, dy), result: meanwhile() };
}

/**
 * dx = dy W with tfjs ops: (W^T dy^T)^T on wasm (see product), elsewhere one matMul by the
 * [in, out] weight transposed; on webgpu the engine's program (frozenLinearTransposed) for a
 * weight held in 16 bits, and for an f32 one where the engine's kernels apply.
 */
function inputGradientWithOps(l: FrozenLinear, dy: tf.Tensor2D): tf.Tensor2D {
  const half = l.halfWeight;
  if (half) return frozenLinearTransposed(dy, half);
  if (fusedKernelsApply()) return frozenLinearTransposed(dy, l.weightT);
  if (tf.getBackend() !== 'wasm') return tf.matMul(dy, l.weightT, false, true);
  return tf.tidy(() => tf.transpose(tf.matMul(l.weightT, tf.transpose(dy)))) as tf.Tensor2D;
}

/**
 * a b with either operand transposed. On wasm the transposes are explicit (cheap: activations
 * and LoRA factors) and the product a plain one, because a transposed matMul leaves XNNPACK's
 * fast path; elsewhere (webgpu, cpu) one matMul with its transpose flags, one dispatch instead
 * of two or three. On wasm the adapters' gradients come here only where the LoRA kernels do
 * not apply (loraKernelsApply: the input's features or an adapted part's width not a multiple
 * of 4).
 */
function product(a: tf.Tensor2D, b: tf.Tensor2D, transposeA: boolean, transposeB: boolean): tf.Tensor2D {
  if (tf.getBackend() !== 'wasm') return tf.matMul(a, b, transposeA, transposeB);
  const [left, right] = [transposeA ? (tf.transpose(a) as tf.Tensor2D) : a, transposeB ? (tf.transpose(b) as tf.Tensor2D) : b];
  return tf.matMul(left, right);
}
