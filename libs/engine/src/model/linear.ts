import * as tf from '@tensorflow/tfjs-core';
import { DEFAULT_MATMUL_PLAN, MatMulPlan, PackFormat, PackedWeights, packWeights, packedMatMul, splitColumns } from '../kernels/matmul';
import { addLoraDeltas, LoraPart, loraGradients, loraGradientsOnThreads, loraKernelsApply, projectWithLora } from '../kernels/lora';
import { packedMatMulTransposed, packedMatMulTransposedAlongside } from '../kernels/matmul-transposed';

/**
 * A trainable delta added to a frozen projection's output, e.g. LoRA: (alpha/r) * B(A(x)).
 * Receives the projection's input [N, in] and returns [N, out] of its own part.
 */
export interface LinearAdapter {
  forward(x: tf.Tensor2D): tf.Tensor2D;
}

/** An adapter whose forward(x) is (x aT) bT, times scaleFactor when set (LoraLayer). */
interface LowRankAdapter extends LinearAdapter {
  readonly lowRank: true;
  readonly aT: tf.Tensor2D;
  readonly bT: tf.Tensor2D;
  readonly scaleFactor: tf.Scalar | null;
}

function isLowRank(adapter: LinearAdapter): adapter is LowRankAdapter {
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

function isRouted(adapter: LinearAdapter): adapter is RoutedAdapter {
  return (adapter as Partial<RoutedAdapter>).routed === true;
}

export interface LinearPart {
  /** HF module name, e.g. "q_proj"; adapters are attached by it. */
  name: string;
  outFeatures: number;
}

/**
 * Outputs kept from the first pass of an activation-checkpointed training step for its
 * recompute pass (training/checkpointing.ts), within a budget of bytes, each by the op that
 * made it: frozen projections' products and attention's outputs. The recompute then takes
 * each kept output instead of computing it again, and recomputes only what is cheap (norms,
 * RoPE, activations), as selective recomputation does (Korthikanti et al., 2022, "Reducing
 * Activation Recomputation in Large Transformer Models"). An output is kept by reference to
 * the tensor the first pass made (no copy) and handed over once.
 */
export class KeptProducts {
  private readonly values = new Map<object, tf.Tensor2D>();
  private bytes = 0;
  private recording = true;

  constructor(private readonly budgetBytes: number) {}

  /** Bytes of outputs kept now. */
  get keptBytes(): number {
    return this.bytes;
  }

  /** The first pass is over: from now on take() hands the kept outputs out, and keep() keeps nothing. */
  replay(): void {
    this.recording = false;
  }

  /** First pass: keeps `value` as the output of `op` (a projection, an attention) while the budget allows. */
  keep(op: object, value: tf.Tensor2D): void {
    const bytes = 4 * value.size;
    if (!this.recording || this.values.has(op) || this.bytes + bytes > this.budgetBytes) return;
    this.values.set(op, tf.keep(value.clone()));
    this.bytes += bytes;
  }

  /** Recompute pass: `op`'s kept output, now the caller's (a tensor of the current scope), or null. */
  take(op: object): tf.Tensor2D | null {
    const kept = this.recording ? undefined : this.values.get(op);
    if (!kept) return null;
    this.values.delete(op);
    this.bytes -= 4 * kept.size;
    const value = kept.clone();
    kept.dispose();
    return value;
  }

  dispose(): void {
    this.values.forEach((t) => t.dispose());
    this.values.clear();
    this.bytes = 0;
  }
}

/** How a training pass uses a projection's value (FrozenLinear.forward). */
export interface ForwardUse {
  /**
   * The caller uses only the gradient w.r.t. x and the adapters, never the value, which then
   * is zeros and costs no product (activation checkpointing's recompute of a block's last
   * projection, whose output only feeds the residual sum).
   */
  valueUnread?: boolean;
  /** Outputs kept between a checkpointed step's passes (with backward enabled). */
  kept?: KeptProducts;
}

/**
 * A frozen projection y = x W^T + b, possibly several HF projections fused side by side
 * (q|k|v, gate|up) so one 2-D matMul replaces three: per-op dispatch dominates on wasm.
 *
 * The weight is stored transposed, [in, out], because matMul with transposeB leaves
 * XNNPACK's fast path. For training, enableBackward() gives the projection a custom gradient
 * w.r.t. its input, dx = dy W. On wasm both ways run on the packed-weight WebAssembly
 * kernels, from one packed copy of the weight: the forward product (kernels/matmul.ts) and
 * dx from the same panels (kernels/matmul-transposed.ts), faster than XNNPACK at training's
 * row counts (docs/benchmarks.md, "Training step"), and XNNPACK never packs a copy of its
 * own; while matmul threads run (loadModel's matmulThreads), both are divided between them.
 * Elsewhere dx = (W^T dy^T)^T, a plain 2-D matMul with the stored [in, out] weight as the
 * left operand and dy^T (small: [out, tokens]) as the right one, plus two cheap transposes
 * of activations. No second [out, in] copy of the weights is kept. Adapters are added per
 * part, so LoRA on q, k, v works on the fused projection without unfusing it.
 *
 * Inference (no backward, no gradient being recorded) runs the packed-weight WebAssembly
 * kernel of kernels/matmul.ts on wasm: as fast as XNNPACK or faster, decoding and prefill alike.
 * The weight is packed into the kernel's panel layout on first use and the copy kept until
 * dispose(). It takes the place of the packed copy XNNPACK makes and keeps on the first
 * tf.matMul of a weight, which an inference-only process now never calls: memory stays the
 * weights plus one packed copy, as before. A process that both infers and trains (backward
 * enabled: tf.matMul, XNNPACK) holds both copies. A process that only infers releases the
 * [in, out] copy as soon as the packed one exists (releaseForInference, loadModel's
 * inferenceOnly) and holds the weights once; it may have them quantized to 8 bits on the way
 * (q8, for serving), and adapters are still added on top in f32.
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
  /** [in, out]; null once released for inference. */
  private weight: tf.Tensor2D | null;

  constructor(
    readonly parts: LinearPart[],
    readonly inFeatures: number,
    /** [in, out] */
    weightT: tf.Tensor2D,
    readonly bias: tf.Tensor1D | null = null,
  ) {
    this.outFeatures = parts.reduce((s, p) => s + p.outFeatures, 0);
    if (weightT.shape[0] !== inFeatures || weightT.shape[1] !== this.outFeatures) {
      throw new Error(`weight [${weightT.shape}] does not match [${inFeatures}, ${this.outFeatures}]`);
    }
    this.weight = weightT;
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

  /** Whether releaseForInference() freed the [in, out] copy. */
  get released(): boolean {
    return this.weight === null;
  }

  /** x W^T + b plus the adapters' deltas; `use` says what a training pass needs of it (ForwardUse). */
  forward(x: tf.Tensor2D, use: ForwardUse = {}): tf.Tensor2D {
    if (this.backward && this.adapters.size > 0 && [...this.adapters.values()].every(isLowRank)) return this.forwardWithFusedGrad(x, use);
    const y = this.backward ? this.projectWithFastGrad(x, use) : this.infer(x);
    if (this.adapters.size === 0) return y;
    return this.addAdapters(x, y);
  }

  setAdapter(partName: string, adapter: LinearAdapter | null): void {
    if (!this.parts.some((p) => p.name === partName)) throw new Error(`no part ${partName} in [${this.parts.map((p) => p.name)}]`);
    if (adapter) this.adapters.set(partName, adapter);
    else this.adapters.delete(partName);
  }

  /** Gives the projection a gradient w.r.t. its input that avoids a transposed matMul. */
  enableBackward(): void {
    this.requireWeight();
    // The backward kernel reads f32 panels only: bf16 ones give the same forward products
    // but would leave dx to tf.matMul.
    if (this.packed === undefined) this.packFormat = 'f32';
    this.backward = true;
  }

  disableBackward(): void {
    this.backward = false;
  }

  dispose(): void {
    this.weight?.dispose();
    this.weight = null;
    this.bias?.dispose();
    this.packed?.dispose();
    this.packed = undefined;
    this.disableBackward();
  }

  private requireWeight(): tf.Tensor2D {
    if (!this.weight) {
      const name = this.parts.map((p) => p.name).join('|');
      throw new Error(`${name}: its weight was released for inference (only the packed copy is kept); load the model without inferenceOnly to train through it`);
    }
    return this.weight;
  }

  /** project(x) without a gradient: the packed kernel where it applies (see the class comment). */
  private infer(x: tf.Tensor2D): tf.Tensor2D {
    const packed = this.packedWeights();
    return (packed && packedMatMul(x, packed, this.bias, this.matmulPlan)) ?? this.project(x);
  }

  /**
   * An inference product here as the WebAssembly kernels compute it: the packed weight, the
   * bias and the low-rank adapters' parts (none without adapters), for kernels that run
   * several steps in one call (kernels/decode-block.ts), for an input of `tokens` rows; null
   * where the product is something else (backward enabled, another backend, an adapter that is
   * neither low-rank nor routed low-rank ones).
   */
  inferenceProduct(tokens: number): { packed: PackedWeights; bias: tf.Tensor1D | null; lora: LoraPart[] } | null {
    if (this.backward) return null;
    const packed = this.packedWeights();
    const lora = this.lowRankParts(tokens);
    return packed && lora ? { packed, bias: this.bias, lora } : null;
  }

  /** The weight in the matmul kernel's layout, packed on first call; null where the kernel does not apply. */
  packedWeights(): PackedWeights | null {
    if (this.packed === undefined) this.packed = packWeights(this.weightT, this.packFormat);
    return this.packed;
  }

  /**
   * x W^T + b for training, on the packed kernel where it applies (wasm, and no gradient
   * being recorded around it: inside a custom gradient's forward function nothing is), else
   * tf.matMul.
   */
  private project(x: tf.Tensor2D): tf.Tensor2D {
    const packed = this.backward ? this.packedWeights() : null;
    const y = packed && packedMatMul(x, packed, this.bias, this.matmulPlan);
    if (y) return y;
    return (this.bias ? tf.fused.matMul({ a: x, b: this.weightT, bias: this.bias }) : tf.matMul(x, this.weightT)) as tf.Tensor2D;
  }

  /** x W^T + b plus the adapters' deltas on the LoRA kernels: in one call with the packed product where it applies, else after project's. */
  private projectWithLoraKernels(x: tf.Tensor2D, parts: LoraPart[]): tf.Tensor2D {
    const packed = this.backward ? this.packedWeights() : null;
    return (packed && projectWithLora(x, packed, this.bias, this.matmulPlan, parts)) ?? tf.tidy(() => addLoraDeltas(this.project(x), x, parts));
  }

  private addAdapters(x: tf.Tensor2D, y: tf.Tensor2D): tf.Tensor2D {
    // Low-rank adapters, no gradient recorded, on wasm: every delta in one kernel call
    // (kernels/lora.ts), as training's forward and a decoding step's one-call block add them.
    const parts = tf.engine().isTapeOn() ? null : this.lowRankParts(x.shape[0]);
    if (parts && loraKernelsApply(x, parts)) return addLoraDeltas(y, x, parts);
    const deltas = this.parts.map((p) => this.adapters.get(p.name)?.forward(x) ?? tf.zeros([x.shape[0], p.outFeatures]));
    return tf.add(y, deltas.length === 1 ? deltas[0] : tf.concat(deltas, 1));
  }

  /**
   * Training with LoRA adapters: projection and adapters as one custom gradient. The value is
   * computed exactly as without it; the backward pass is written out by hand. Inside a custom
   * gradient tfjs records nothing on its tape, so none of the ~10 intermediate tensors per
   * projection is copied for the backward pass (the wasm backend copies every saved tensor),
   * and only x is kept.
   */
  private forwardWithFusedGrad(x: tf.Tensor2D, use: ForwardUse): tf.Tensor2D {
    const adapters = this.parts.map((p) => this.adapters.get(p.name) as LowRankAdapter | undefined);
    const factors = adapters.flatMap((a) => (a ? [a.aT, a.bT] : []));
    const sizes = this.parts.map((p) => p.outFeatures);
    // On wasm, every adapter's products in one kernel call per pass (kernels/lora.ts).
    const parts = this.loraParts(adapters, x.shape[0]);
    const kernelParts = loraKernelsApply(x, parts) ? parts : null;
    const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
      const input = args[0] as tf.Tensor2D;
      const save = args[args.length - 1] as tf.GradSaveFunc;
      save([input]);
      return {
        value: this.trainingValue(input, use, () => (kernelParts ? this.projectWithLoraKernels(input, kernelParts) : this.projectWithAdapters(input, adapters))),
        gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) =>
          tf.tidy(() => {
            const g = dy as tf.Tensor2D;
            const xs = saved[0] as tf.Tensor2D;
            if (kernelParts) {
              // From DIVIDED_BACKWARD_THREADS matmul threads: the frozen dx and the adapters' backward
              // divided between them, in one call.
              const packed = this.packedWeights();
              const divided = packed && loraGradientsOnThreads(xs, g, packed, kernelParts);
              if (divided) return [divided.dx, ...divided.grads];
              // Elsewhere the adapters' gradients need no frozen dx: they run on this thread
              // while any matmul threads compute it, and their share of dx is added after.
              const { dx, result } = this.inputGradientAlongside(g, () => loraGradients(xs, g, kernelParts));
              return [tf.add(dx, result.dx), ...result.grads];
            }
            let dx = this.inputGradient(g);
            const xT = tf.transpose(xs) as tf.Tensor2D;
            const gs = sizes.length === 1 ? [g] : splitColumns(g, sizes);
            const grads: tf.Tensor[] = [];
            adapters.forEach((a, i) => {
              if (!a) return;
              // delta = s (x aT) bT: with gs = s dy_part, dbT = h^T gs, dh = gs bT^T, daT = x^T dh.
              const gScaled = a.scaleFactor ? (tf.mul(gs[i], a.scaleFactor) as tf.Tensor2D) : gs[i];
              const h = smallMatMul(xs, a.aT);
              const dbT = tf.matMul(tf.transpose(h) as tf.Tensor2D, gScaled);
              const dh = smallMatMul(gScaled, tf.transpose(a.bT) as tf.Tensor2D);
              const daT = smallMatMul(xT, dh);
              dx = tf.add(dx, tf.matMul(dh, tf.transpose(a.aT) as tf.Tensor2D));
              grads.push(daT, dbT);
            });
            return [dx, ...grads];
          }),
      };
    });
    return f(x, ...factors) as tf.Tensor2D;
  }

  /**
   * The adapters as low-rank parts for an input of `tokens` rows, in the parts' order ([]
   * without adapters; a routed adapter gives one part per adapter in use, with its rows), or
   * null when one is neither.
   */
  private lowRankParts(tokens: number): LoraPart[] | null {
    const adapters = this.parts.map((p) => this.adapters.get(p.name));
    if (!adapters.every((a) => a === undefined || isLowRank(a) || isRouted(a))) return null;
    return this.loraParts(adapters as (LowRankAdapter | RoutedAdapter | undefined)[], tokens);
  }

  /** The adapters present, with the output columns each covers, in the parts' order. */
  private loraParts(adapters: (LowRankAdapter | RoutedAdapter | undefined)[], tokens: number): LoraPart[] {
    let col = 0;
    return this.parts.flatMap((p, i) => {
      const [a, at] = [adapters[i], col];
      col += p.outFeatures;
      if (!a) return [];
      if (!isRouted(a)) return [{ aT: a.aT, bT: a.bT, scale: a.scaleFactor, col: at, width: p.outFeatures }];
      return a
        .members(tokens)
        .filter((m) => m.rows.length > 0)
        .map((m) => ({ aT: m.aT, bT: m.bT, scale: m.scaleFactor, col: at, width: p.outFeatures, rows: m.rows }));
    });
  }

  /** x W^T + b plus the low-rank adapters' deltas (undefined: no adapter on that part). */
  private projectWithAdapters(x: tf.Tensor2D, adapters: (LowRankAdapter | undefined)[]): tf.Tensor2D {
    const deltas = adapters.map((a, i) => (a ? lowRankDelta(x, a) : tf.zeros([x.shape[0], this.parts[i].outFeatures])));
    return tf.add(this.project(x), deltas.length === 1 ? deltas[0] : tf.concat(deltas, 1));
  }

  /** A training pass's value of this projection: zeros when unread, the kept one on a recompute, else `compute()` (kept for the recompute where asked). */
  private trainingValue(x: tf.Tensor2D, use: ForwardUse, compute: () => tf.Tensor2D): tf.Tensor2D {
    if (use.valueUnread) return tf.zeros([x.shape[0], this.outFeatures]);
    const kept = use.kept?.take(this);
    if (kept) return kept;
    const value = compute();
    use.kept?.keep(this, value);
    return value;
  }

  private projectWithFastGrad(x: tf.Tensor2D, use: ForwardUse): tf.Tensor2D {
    const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => ({
      value: this.trainingValue(args[0] as tf.Tensor2D, use, () => this.project(args[0] as tf.Tensor2D)),
      gradFunc: (dy: tf.Tensor | tf.Tensor[]) => this.inputGradient(dy as tf.Tensor2D),
    }));
    return f(x) as tf.Tensor2D;
  }

  /**
   * The adapters as low-rank parts, each with the output columns it covers, for an input of
   * `tokens` rows ([] without adapters; routed adapters give a part per adapter in use, with its
   * rows), or null where one is not low-rank: what a kernel that adds them itself needs.
   */
  adapterParts(tokens: number): LoraPart[] | null {
    return this.lowRankParts(tokens);
  }

  /** Whether any part has an adapter. */
  get hasAdapters(): boolean {
    return this.adapters.size > 0;
  }

  /**
   * dx = dy W [tokens, in], the frozen projection's gradient w.r.t. its input (adapters not
   * included): from the packed panels on wasm, else (W^T dy^T)^T, a plain 2-D matMul against
   * the one stored [in, out] copy.
   */
  inputGradient(dy: tf.Tensor2D): tf.Tensor2D {
    const packed = this.packedWeights();
    return (packed && packedMatMulTransposed(dy, packed)) ?? this.inputGradientWithOps(dy);
  }

  /** inputGradient(dy) and `meanwhile()`, at once where the matmul threads compute dx (packedMatMulTransposedAlongside). */
  private inputGradientAlongside<T>(dy: tf.Tensor2D, meanwhile: () => T): { dx: tf.Tensor2D; result: T } {
    const packed = this.packedWeights();
    return (packed && packedMatMulTransposedAlongside(dy, packed, meanwhile)) ?? { dx: this.inputGradientWithOps(dy), result: meanwhile() };
  }

  /** dx = (W^T dy^T)^T with tfjs ops (see the class comment). */
  private inputGradientWithOps(dy: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => tf.transpose(tf.matMul(this.weightT, tf.transpose(dy)))) as tf.Tensor2D;
  }
}

/** A low-rank adapter's delta, s (x aT) bT, with x aT on the packed kernel where it applies. */
function lowRankDelta(x: tf.Tensor2D, a: LowRankAdapter): tf.Tensor2D {
  const delta = tf.matMul(smallMatMul(x, a.aT), a.bT) as tf.Tensor2D;
  return a.scaleFactor ? (tf.mul(delta, a.scaleFactor) as tf.Tensor2D) : delta;
}

/**
 * x w for a narrow w [K, n] (a LoRA factor: n = r columns) on the packed matmul kernel where it
 * applies (wasm, n a multiple of 8, no gradient being recorded), w packed for the call:
 * XNNPACK multiplies into 8 columns several times more slowly per multiply-add than into
 * hundreds, and the packing is K x n floats. A training product, as project's. Always on the
 * calling thread, in tfjs's heap,
 * even while matmul threads run: one or two panels cannot be divided, and the threads'
 * memory is for weights that stay. tf.matMul elsewhere.
 */
function smallMatMul(x: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  if (w.shape[1] % 8 === 0 && !tf.engine().isTapeOn()) {
    const packed = packWeights(w, 'f32', { onThreads: false });
    if (packed) {
      try {
        const y = packedMatMul(x, packed);
        if (y) return y;
      } finally {
        packed.dispose();
      }
    }
  }
  return tf.matMul(x, w);
}
