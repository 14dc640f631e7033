import * as tf from '@tensorflow/tfjs-core';

/**
 * A trainable delta added to a frozen projection's output, e.g. LoRA: (alpha/r) * B(A(x)).
 * Receives the projection's input [N, in] and returns [N, out] of its own part.
 */
export interface LinearAdapter {
  forward(x: tf.Tensor2D): tf.Tensor2D;
}

export interface LinearPart {
  /** HF module name, e.g. "q_proj"; adapters are attached by it. */
  name: string;
  outFeatures: number;
}

/**
 * A frozen projection y = x W^T + b, possibly several HF projections fused side by side
 * (q|k|v, gate|up) so one 2-D matMul replaces three: per-op dispatch dominates on wasm.
 *
 * The weight is stored transposed, [in, out], because matMul with transposeB leaves
 * XNNPACK's fast path. For training, enableBackward() keeps the HF-layout copy [out, in] and
 * the backward pass becomes dx = dy W, again a plain 2-D matMul. Adapters are added per part,
 * so LoRA on q, k, v works on the fused projection without unfusing it.
 */
export class FrozenLinear {
  readonly outFeatures: number;
  private readonly adapters = new Map<string, LinearAdapter>();
  private weight: tf.Tensor2D | null = null;

  constructor(
    readonly parts: LinearPart[],
    readonly inFeatures: number,
    /** [in, out] */
    readonly weightT: tf.Tensor2D,
    readonly bias: tf.Tensor1D | null = null,
  ) {
    this.outFeatures = parts.reduce((s, p) => s + p.outFeatures, 0);
    if (weightT.shape[0] !== inFeatures || weightT.shape[1] !== this.outFeatures) {
      throw new Error(`weight [${weightT.shape}] does not match [${inFeatures}, ${this.outFeatures}]`);
    }
  }

  forward(x: tf.Tensor2D): tf.Tensor2D {
    const y = this.weight ? this.projectWithFastGrad(x) : this.project(x);
    if (this.adapters.size === 0) return y;
    const deltas = this.parts.map((p) => this.adapters.get(p.name)?.forward(x) ?? tf.zeros([x.shape[0], p.outFeatures]));
    return tf.add(y, deltas.length === 1 ? deltas[0] : tf.concat(deltas, 1));
  }

  setAdapter(partName: string, adapter: LinearAdapter | null): void {
    if (!this.parts.some((p) => p.name === partName)) throw new Error(`no part ${partName} in [${this.parts.map((p) => p.name)}]`);
    if (adapter) this.adapters.set(partName, adapter);
    else this.adapters.delete(partName);
  }

  /** Keeps a [out, in] copy so gradients w.r.t. the input avoid a transposed matMul. */
  enableBackward(): void {
    if (!this.weight) this.weight = tf.keep(tf.transpose(this.weightT));
  }

  disableBackward(): void {
    this.weight?.dispose();
    this.weight = null;
  }

  dispose(): void {
    this.weightT.dispose();
    this.bias?.dispose();
    this.disableBackward();
  }

  private project(x: tf.Tensor2D): tf.Tensor2D {
    return (this.bias ? tf.fused.matMul({ a: x, b: this.weightT, bias: this.bias }) : tf.matMul(x, this.weightT)) as tf.Tensor2D;
  }

  private projectWithFastGrad(x: tf.Tensor2D): tf.Tensor2D {
    const weight = this.weight as tf.Tensor2D;
    const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => ({
      value: this.project(args[0] as tf.Tensor2D),
      gradFunc: (dy: tf.Tensor | tf.Tensor[]) => tf.matMul(dy as tf.Tensor2D, weight),
    }));
    return f(x) as tf.Tensor2D;
  }
}
