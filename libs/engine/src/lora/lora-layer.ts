import * as tf from '@tensorflow/tfjs-core';
import type { LoadedModel } from '../loader';
import type { LlamaModel } from '../model/llama';
import { FrozenLinear, LinearAdapter } from '../model/linear';
import { AdapterTensors, LORA_TARGETS, LoraSpec, LoraTarget, loraTargetShape, loraTensorName, validateLoraSpec } from './peft';

/**
 * LoRA on a frozen projection: delta(x) = (alpha / r) * (x A^T) B^T.
 *
 * The matrices are held transposed to PEFT's layout, A^T [in, r] and B^T [r, out], so the
 * forward pass is two plain 2-D matMuls (transposed matMuls leave XNNPACK's fast path).
 * For training they are tf.Variables; for serving they are constants with the scale folded
 * into B^T, one multiply fewer per projection per decoded token.
 */
export class LoraLayer implements LinearAdapter {
  /**
   * Tells FrozenLinear that forward(x) is exactly (x aT) bT, times scaleFactor when set, so
   * that during training it can give projection and adapter one fused gradient.
   */
  readonly lowRank = true;

  constructor(
    readonly target: LoraTarget,
    readonly layer: number,
    /** [in, r] */
    readonly aT: tf.Tensor2D,
    /** [r, out] */
    readonly bT: tf.Tensor2D,
    /** alpha / r, or null when it is already folded into bT. */
    private readonly scale: tf.Scalar | null,
    /** alpha / r as a number (1 where folded into bT). */
    readonly scaleValue = 1,
  ) {}

  /** alpha / r as a scalar tensor, or null when it is folded into bT. */
  get scaleFactor(): tf.Scalar | null {
    return this.scale;
  }

  forward(x: tf.Tensor2D): tf.Tensor2D {
    const delta = tf.matMul(tf.matMul(x, this.aT), this.bT) as tf.Tensor2D;
    return this.scale ? (tf.mul(delta, this.scale) as tf.Tensor2D) : delta;
  }
}

/** The engine projection (fused where HF has separate ones) that holds `target` of `layer`. */
export function linearFor(model: LlamaModel, layer: number, target: LoraTarget): FrozenLinear {
  const block = model.blocks[layer];
  switch (target) {
    case 'q_proj':
    case 'k_proj':
    case 'v_proj':
      return block.attention.qkv;
    case 'o_proj':
      return block.attention.o;
    case 'gate_proj':
    case 'up_proj':
      return block.mlp.gateUp;
    case 'down_proj':
      return block.mlp.down;
  }
}

function transposed(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = data[i * cols + j];
  return out;
}

/**
 * A LoRA adapter attached to a model's FrozenLinear hooks. While attached, every forward
 * pass of that model includes it; detach() restores the base model. One adapter per model
 * at a time: the hooks hold one adapter per projection.
 */
export class LoraAttachment {
  private attached = true;

  private constructor(
    readonly model: LlamaModel,
    readonly spec: LoraSpec,
    readonly layers: LoraLayer[],
    readonly trainable: boolean,
    private readonly owned: tf.Tensor[],
  ) {}

  /**
   * Attaches `tensors` (PEFT names and layouts) to `model`. trainable makes A and B
   * tf.Variables for an optimizer; otherwise they are constants with alpha/r folded in.
   */
  static attach(model: LlamaModel, spec: LoraSpec, tensors: AdapterTensors, options: { trainable?: boolean } = {}): LoraAttachment {
    validateLoraSpec(spec);
    const trainable = options.trainable ?? false;
    const scaleValue = spec.alpha / spec.r;
    const owned: tf.Tensor[] = [];
    const layers: LoraLayer[] = [];
    const scale = trainable ? tf.scalar(scaleValue) : null;
    if (scale) owned.push(scale);
    try {
      for (let layer = 0; layer < model.config.numLayers; layer++) {
        for (const target of LORA_TARGETS) {
          if (!spec.targetModules.includes(target)) continue;
          const { inFeatures, outFeatures } = loraTargetShape(model.config, target);
          const get = (m: 'A' | 'B', shape: number[]) => {
            const name = loraTensorName(layer, target, m);
            const t = tensors.get(name);
            if (!t) throw new Error(`adapter tensor ${name} is missing`);
            if (t.shape[0] !== shape[0] || t.shape[1] !== shape[1]) throw new Error(`adapter tensor ${name} has shape [${t.shape}], expected [${shape}]`);
            return t.data;
          };
          const aT = transposed(get('A', [spec.r, inFeatures]), spec.r, inFeatures);
          const bT = transposed(get('B', [outFeatures, spec.r]), outFeatures, spec.r);
          if (!trainable) for (let i = 0; i < bT.length; i++) bT[i] *= scaleValue;
          const make = (data: Float32Array, shape: [number, number]) =>
            // tidy: the variable shares the initial tensor's data, which would otherwise stay counted as a live tensor.
            trainable ? tf.tidy(() => tf.variable(tf.tensor2d(data, shape), true)) : tf.tensor2d(data, shape);
          const a = make(aT, [inFeatures, spec.r]);
          const b = make(bT, [spec.r, outFeatures]);
          owned.push(a, b);
          layers.push(new LoraLayer(target, layer, a, b, scale, scale ? scaleValue : 1));
        }
      }
    } catch (err) {
      owned.forEach((t) => t.dispose());
      throw err;
    }
    for (const l of layers) linearFor(model, l.layer, l.target).setAdapter(l.target, l);
    return new LoraAttachment(model, spec, layers, trainable, owned);
  }

  /** The trainable variables, A^T then B^T per projection. */
  variables(): tf.Variable[] {
    if (!this.trainable) return [];
    return this.layers.flatMap((l) => [l.aT as tf.Variable, l.bT as tf.Variable]);
  }

  /** The trainable variables of each block, by layer (activation checkpointing needs them per block). */
  variablesByLayer(): tf.Variable[][] {
    const out: tf.Variable[][] = Array.from({ length: this.model.config.numLayers }, () => []);
    if (this.trainable) for (const l of this.layers) out[l.layer].push(l.aT as tf.Variable, l.bT as tf.Variable);
    return out;
  }

  /** The adapter in PEFT names and layouts ([r, in] and [out, r]), alpha/r unfolded. */
  async exportTensors(): Promise<AdapterTensors> {
    const out: AdapterTensors = new Map();
    const unscale = this.trainable ? 1 : this.spec.r / this.spec.alpha;
    for (const l of this.layers) {
      const [inF, r] = l.aT.shape;
      const outF = l.bT.shape[1];
      out.set(loraTensorName(l.layer, l.target, 'A'), { shape: [r, inF], data: transposed((await l.aT.data()) as Float32Array, inF, r) });
      const b = transposed((await l.bT.data()) as Float32Array, r, outF);
      if (unscale !== 1) for (let i = 0; i < b.length; i++) b[i] *= unscale;
      out.set(loraTensorName(l.layer, l.target, 'B'), { shape: [outF, r], data: b });
    }
    return out;
  }

  get isAttached(): boolean {
    return this.attached;
  }

  /** Removes the adapter from the model's hooks (the tensors stay usable until dispose()). */
  detach(): void {
    if (!this.attached) return;
    for (const l of this.layers) linearFor(this.model, l.layer, l.target).setAdapter(l.target, null);
    this.attached = false;
  }

  /** Re-attaches a detached adapter, e.g. after computing reference logprobs without it. */
  reattach(): void {
    if (this.attached) return;
    for (const l of this.layers) linearFor(this.model, l.layer, l.target).setAdapter(l.target, l);
    this.attached = true;
  }

  dispose(): void {
    this.detach();
    this.owned.forEach((t) => t.dispose());
    this.owned.length = 0;
  }
}

/**
 * Serves a checkpoint: attaches a PEFT adapter (from readPeftAdapter) to a loaded model for
 * inference. Call detach() or dispose() on the result to return to the base model.
 */
export function applyAdapter(lm: LoadedModel | LlamaModel, adapter: { spec: LoraSpec; tensors: AdapterTensors }): LoraAttachment {
  const model = 'model' in lm ? lm.model : lm;
  return LoraAttachment.attach(model, adapter.spec, adapter.tensors, { trainable: false });
}
