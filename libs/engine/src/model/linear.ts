import * as tf from '@tensorflow/tfjs-core';
import type { HalfDtype } from '../dtype';
import type { LoraPart } from '../kernels/lora';
import { DEFAULT_MATMUL_PLAN, MatMulPlan, PackFormat, PackedWeights, packWeights } from '../kernels/matmul';
import { linear } from '../ops/linear';

/**
 * A trainable delta added to a frozen projection's output, e.g. LoRA: (alpha/r) * B(A(x)).
 * Receives the projection's input [N, in] and returns [N, out] of its own part.
 */
export interface LinearAdapter {
  forward(x: tf.Tensor2D): tf.Tensor2D;
}

/** An adapter whose forward(x) is (x aT) bT, times scaleFactor when set (LoraLayer). */
export interface LowRankAdapter extends LinearAdapter {
  readonly lowRank: true;
  readonly aT: tf.Tensor2D;
  readonly bT: tf.Tensor2D;
  readonly scaleFactor: tf.Scalar | null;
  /** scaleFactor as a number, for kernels that compile it in (kernels/lora.webgpu.ts); absent where unknown. */
  readonly scaleValue?: number;
}

export function isLowRank(adapter: LinearAdapter): adapter is LowRankAdapter {
  return (adapter as Partial<LowRankAdapter>).lowRank === true;
}

/** One low-rank adapter of a RoutedAdapter and the rows of the input it applies to, ascending. */
export interface RoutedMember {
  aT: tf.Tensor2D;
  bT: tf.Tensor2D;
  scaleFactor: tf.Scalar | null;
  rows: readonly number[];
}

/**
 * Low-rank adapters that each apply to some rows of the input: several LoRA checkpoints
 * sharing a batch row by row (LoraRouter). forward(x) is each row's own adapter's delta.
 */
export interface RoutedAdapter extends LinearAdapter {
  readonly routed: true;
  /** For an input of `tokens` rows, each adapter in use and its rows. */
  members(tokens: number): readonly RoutedMember[];
}

export function isRouted(adapter: LinearAdapter): adapter is RoutedAdapter {
  return (adapter as Partial<RoutedAdapter>).routed === true;
}

/**
 * A projection's weight held in 16 bits, as a bf16 or f16 checkpoint stores it: [in, out / 2]
 * int32, each element two neighbouring output columns (dtype.ts's halfPairs). A process on
 * webgpu holds such a checkpoint's weights so (loader.ts), in half the bytes of f32, for
 * serving and for LoRA training alike (the weights are frozen); the GPU programs unpack each
 * value to f32 as they read it.
 */
export interface HalfWeight {
  pairs: tf.Tensor2D;
  dtype: HalfDtype;
}

export interface LinearPart {
  /** HF module name, e.g. "q_proj"; adapters are attached by it. */
  name: string;
  outFeatures: number;
}

/**
 * A frozen projection y = x W^T + b plus its adapters' deltas, possibly several HF projections
 * fused side by side (q|k|v, gate|up) so one 2-D matMul replaces three: per-op dispatch
 * dominates on wasm. Adapters are added per part, so LoRA on q, k, v works on the fused
 * projection without unfusing it.
 *
 * This class holds the weight and says what the projection computes (product and
 * adapterDeltas, with tfjs ops); forward() runs it by the implementation that fits the backend
 * and the pass (ops/linear.ts), and a training pass differentiates it by the gradients of
 * ops/linear-gradient.ts.
 *
 * The weight is stored transposed, [in, out], because matMul with transposeB leaves
 * XNNPACK's fast path. On wasm the projection is multiplied from a copy packed into the
 * matmul kernel's panel layout (kernels/matmul.ts), made on first use and kept until
 * dispose(): it takes the place of the packed copy XNNPACK makes and keeps on the first
 * tf.matMul of a weight, which an inference-only process never calls. A process that only
 * infers releases the [in, out] copy as soon as the packed one exists (releaseForInference,
 * loadModel's inferenceOnly) and holds the weights once, quantized to 8 bits on the way where
 * asked (q8, for serving); adapters are still added on top in f32. Training (enableBackward)
 * packs f32 panels, which the backward kernel reads too. On webgpu a bf16 or f16 checkpoint's
 * weight is held in its 16 bits instead of [in, out] f32 (HalfWeight, from the loader), for
 * serving and training alike: only webgpu's programs read it (ops/linear.ts).
 */
export class FrozenLinear {
  readonly outFeatures: number;
  private readonly adapters = new Map<string, LinearAdapter>();
  private backward = false;
  /** The weight in the matmul kernel's layout; undefined until first tried, null where the kernel does not apply. */
  private packed: PackedWeights | null | undefined = undefined;
  /** How packedWeights() packs the weight: as it is, unless releaseForInference asked for q8. */
  private packFormat: PackFormat = 'auto';
  /** How the kernel runs over the packed weight: the plan of the model this projection belongs to (LlamaModel.matmulPlan). */
  matmulPlan: Readonly<MatMulPlan> = DEFAULT_MATMUL_PLAN;
  /** [in, out]; null once released for inference, and for a weight held in 16 bits. */
  private weight: tf.Tensor2D | null;
  /** The weight in 16 bits, where it is held so instead of [in, out] f32. */
  private half: HalfWeight | null = null;

  constructor(
    readonly parts: LinearPart[],
    readonly inFeatures: number,
    /** [in, out] f32, or held in 16 bits (which only webgpu's programs read). */
    weight: tf.Tensor2D | HalfWeight,
    readonly bias: tf.Tensor1D | null = null,
  ) {
    this.outFeatures = parts.reduce((s, p) => s + p.outFeatures, 0);
    const shape = 'pairs' in weight ? [weight.pairs.shape[0], 2 * weight.pairs.shape[1]] : weight.shape;
    if (shape[0] !== inFeatures || shape[1] !== this.outFeatures) {
      throw new Error(`weight [${shape}] does not match [${inFeatures}, ${this.outFeatures}]`);
    }
    if ('pairs' in weight) {
      this.half = weight;
      this.weight = null;
    } else {
      this.weight = weight;
    }
  }

  /** The weight held in 16 bits, or null where it is held as [in, out] f32 (or was released for the wasm kernel's copy). */
  get halfWeight(): HalfWeight | null {
    return this.half;
  }

  /** The weight as webgpu's programs take it: held in 16 bits, or [in, out] f32. */
  gpuWeight(): tf.Tensor2D | HalfWeight {
    return this.half ?? this.requireWeight();
  }

  /** x W^T + b plus the adapters' deltas. */
  forward(x: tf.Tensor2D): tf.Tensor2D {
    return linear(this, x);
  }

  /** x W^T + b with tfjs ops. */
  product(x: tf.Tensor2D): tf.Tensor2D {
    return (this.bias ? tf.fused.matMul({ a: x, b: this.weightT, bias: this.bias }) : tf.matMul(x, this.weightT)) as tf.Tensor2D;
  }

  /** Every part's adapter delta side by side, [N, out] (zeros for a part without one), with the adapters' own forward. */
  adapterDeltas(x: tf.Tensor2D): tf.Tensor2D {
    const deltas = this.parts.map((p) => this.adapters.get(p.name)?.forward(x) ?? tf.zeros([x.shape[0], p.outFeatures]));
    return (deltas.length === 1 ? deltas[0] : tf.concat(deltas, 1)) as tf.Tensor2D;
  }

  /** The weight, [in, out]. Throws once released for inference. */
  get weightT(): tf.Tensor2D {
    return this.requireWeight();
  }

  /**
   * Inference only from now on: packs the weight for the matmul kernel now and frees the
   * [in, out] copy, so that the process holds the weights once (in half the bytes for a bf16
   * checkpoint) instead of twice. With format 'q8' the packed copy is quantized to 8 bits
   * (a quarter of the f32 bytes; the outputs change within the bound docs/benchmarks.md
   * gives). Where the kernel does not apply (another backend), the weight stays as it is.
   * Afterwards gradients through this projection throw.
   */
  releaseForInference(format: PackFormat = 'auto'): void {
    if (this.packed === undefined) this.packFormat = format;
    if (!this.packedWeights() || !this.weight) return;
    this.weight.dispose();
    this.weight = null;
  }

  /** Whether no [in, out] f32 copy is held: releaseForInference() freed it, or the weight is held in 16 bits. */
  get released(): boolean {
    return this.weight === null;
  }

  /** The weight in the matmul kernel's layout, packed on first call; null where the kernel does not apply. */
  packedWeights(): PackedWeights | null {
    if (this.half) return null;
    if (this.packed === undefined) this.packed = packWeights(this.weightT, this.packFormat);
    return this.packed;
  }

  setAdapter(partName: string, adapter: LinearAdapter | null): void {
    if (!this.parts.some((p) => p.name === partName)) throw new Error(`no part ${partName} in [${this.parts.map((p) => p.name)}]`);
    if (adapter) this.adapters.set(partName, adapter);
    else this.adapters.delete(partName);
  }

  /** Each part's adapter, in the parts' order (undefined: none on that part), where every adapter present is low-rank; null otherwise. */
  lowRankAdapters(): (LowRankAdapter | undefined)[] | null {
    const adapters = this.partAdapters();
    return adapters.every((a) => a === undefined || isLowRank(a)) ? (adapters as (LowRankAdapter | undefined)[]) : null;
  }

  /** Whether any part has an adapter. */
  get hasAdapters(): boolean {
    return this.adapters.size > 0;
  }

  /**
   * The adapters as low-rank parts, each with the output columns it covers, for an input of
   * `tokens` rows ([] without adapters; routed adapters give a part per adapter in use, with its
   * rows), or null where one is not low-rank: what a kernel that adds them itself needs.
   */
  adapterParts(tokens: number): LoraPart[] | null {
    const adapters = this.partAdapters();
    if (!adapters.every((a) => a === undefined || isLowRank(a) || isRouted(a))) return null;
    let col = 0;
    return this.parts.flatMap((p, i) => {
      const [a, at] = [adapters[i], col];
      col += p.outFeatures;
      if (!a) return [];
      if (!isRouted(a)) {
        const lowRank = a as LowRankAdapter;
        return [{ aT: lowRank.aT, bT: lowRank.bT, scale: lowRank.scaleFactor, col: at, width: p.outFeatures }];
      }
      return a
        .members(tokens)
        .filter((m) => m.rows.length > 0)
        .map((m) => ({ aT: m.aT, bT: m.bT, scale: m.scaleFactor, col: at, width: p.outFeatures, rows: m.rows }));
    });
  }

  /** Training from now on: forward() records a gradient w.r.t. its input (and its adapters) that avoids a transposed matMul. */
  enableBackward(): void {
    // A weight held in 16 bits trains on webgpu's programs, which read it as it is.
    if (!this.half) this.requireWeight();
    // The backward kernel reads f32 panels only: bf16 ones give the same forward products
    // but would leave dx to tf.matMul.
    if (this.packed === undefined) this.packFormat = 'f32';
    this.backward = true;
  }

  disableBackward(): void {
    this.backward = false;
  }

  /** Whether enableBackward() is in effect. */
  get backwardEnabled(): boolean {
    return this.backward;
  }

  dispose(): void {
    this.weight?.dispose();
    this.weight = null;
    this.half?.pairs.dispose();
    this.half = null;
    this.bias?.dispose();
    this.packed?.dispose();
    this.packed = undefined;
    this.disableBackward();
  }

  private partAdapters(): (LinearAdapter | undefined)[] {
    return this.parts.map((p) => this.adapters.get(p.name));
  }

  private requireWeight(): tf.Tensor2D {
    if (!this.weight) {
      const name = this.parts.map((p) => p.name).join('|');
      if (this.half) throw new Error(`${name}: its weight is held in 16 bits (${this.half.dtype}), which only webgpu's programs read; load the model with gpuWeights 'f32' for an f32 copy`);
      throw new Error(`${name}: its weight was released for inference (only the packed copy is kept); load the model without inferenceOnly to train through it`);
    }
    return this.weight;
  }
}
