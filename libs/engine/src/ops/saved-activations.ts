import * as tf from '@tensorflow/tfjs-core';

/**
 * What one pass over a decoder block keeps for its explicit backward (ops/decoder-block-gradient.ts):
 * while a store is in effect, each op that has a backward of its own saves, by reference, the
 * tensors that backward reads, as its own gradient function would under a tape: a norm its
 * input, a projection its input (and, where its kernel made it, its adapters' x A), the fused head
 * norms the q|k|v output, the gated activation its gate|up input, attention its q, k, v,
 * mask and output. The model's forward (Block.forward) knows nothing of it, and runs unchanged
 * and without a tape. Outside such a pass no store is in effect and the ops save nothing.
 *
 * Saved tensors are kept (tf.keep) past the pass's scope; dispose() frees them. Keys are the
 * objects that say which op it was: a norm's weight, a projection, and for the block's one
 * gated activation and one attention, their kind.
 */
export interface SavedAttention {
  /** Token-major queries [B*T, H*D], rotated and scaled. */
  q: tf.Tensor2D;
  /** [B, KV, S, D]. */
  k: tf.Tensor4D;
  v: tf.Tensor4D;
  mask: tf.Tensor4D;
  /** The result, [B*T, H*D]. */
  out: tf.Tensor2D;
  /** Each query's statistics where the webgpu forward wrote them (kernels/prompt-attention.ts, promptAttentionSaving), else null. */
  stats: tf.Tensor2D | null;
  B: number;
  H: number;
  T: number;
}

export class SavedActivations {
  private readonly norms = new Map<tf.Tensor, tf.Tensor2D>();
  private readonly linears = new Map<object, tf.Tensor2D>();
  private readonly adapterProducts = new Map<object, tf.Tensor2D>();
  private readonly headNormsInputs = new Map<object, tf.Tensor2D>();
  private gateUp: tf.Tensor2D | null = null;
  private attentionInputs: SavedAttention | null = null;
  /** Tensors of the step that outlive it anyway (the mask, the block's input): never disposed here. */
  private readonly shared = new Set<tf.Tensor>();
  private readonly owned = new Set<tf.Tensor>();

  /** Marks tensors the caller owns (the block's input, the step's mask): saved by reference, never disposed or counted here. */
  share(...tensors: tf.Tensor[]): void {
    tensors.forEach((t) => this.shared.add(t));
  }

  /** An RMSNorm's input, by the norm's weight. */
  saveNormInput(weight: tf.Tensor, x: tf.Tensor2D): void {
    this.put(this.norms, weight, x, 'norm');
  }

  normInput(weight: tf.Tensor): tf.Tensor2D {
    return this.get(this.norms, weight, 'norm');
  }

  /** A projection's input, by the projection (model/linear.ts's FrozenLinear). */
  saveLinearInput(linear: object, x: tf.Tensor2D): void {
    this.put(this.linears, linear, x, 'projection');
  }

  linearInput(linear: object): tf.Tensor2D {
    return this.get(this.linears, linear, 'projection');
  }

  /** A projection's x [A_0 | A_1 | ...], its adapters' first factors' product, where its forward made one (kernels/lora.webgpu.ts). */
  saveAdapterProduct(linear: object, h: tf.Tensor2D): void {
    this.put(this.adapterProducts, linear, h, "adapters' product");
  }

  /** The projection's saved adapters' product, or null where its forward saved none. */
  adapterProduct(linear: object): tf.Tensor2D | null {
    return this.adapterProducts.get(linear) ?? null;
  }

  /** The q|k|v output that the fused head norms, RoPE and layouts read (ops/rope.ts, ropeQkvNormed), by the head norms. */
  saveHeadNormsInput(norms: object, qkv: tf.Tensor2D): void {
    this.put(this.headNormsInputs, norms, qkv, 'head norms');
  }

  /** The q|k|v output ropeQkvNormed saved, or null where the head norms ran as ops (which saved their own inputs). */
  headNormsInput(norms: object): tf.Tensor2D | null {
    return this.headNormsInputs.get(norms) ?? null;
  }

  /** The gated activation's input gate|up [M, 2F]. */
  saveGateInput(gateUp: tf.Tensor2D): void {
    if (this.gateUp) throw new Error('a block pass saved two gated activations');
    this.gateUp = this.keep(gateUp);
  }

  gateInput(): tf.Tensor2D {
    if (!this.gateUp) throw new Error('the block pass saved no gated activation');
    return this.gateUp;
  }

  saveAttention(saved: SavedAttention): void {
    if (this.attentionInputs) throw new Error('a block pass saved two attentions');
    this.shared.add(saved.mask);
    this.attentionInputs = { ...saved, q: this.keep(saved.q), k: this.keep(saved.k), v: this.keep(saved.v), out: this.keep(saved.out), stats: saved.stats && this.keep(saved.stats) };
  }

  attention(): SavedAttention {
    if (!this.attentionInputs) throw new Error('the block pass saved no attention');
    return this.attentionInputs;
  }

  /** Bytes of the tensors saved here (each buffer once; the shared ones not counted). */
  get bytes(): number {
    const seen = new Set<object>();
    let bytes = 0;
    for (const t of this.owned) {
      if (seen.has(t.dataId)) continue;
      seen.add(t.dataId);
      bytes += 4 * t.size;
    }
    return bytes;
  }

  dispose(): void {
    tf.dispose([...this.owned]);
    this.owned.clear();
    this.norms.clear();
    this.linears.clear();
    this.adapterProducts.clear();
    this.headNormsInputs.clear();
    this.gateUp = null;
    this.attentionInputs = null;
  }

  private put<K>(map: Map<K, tf.Tensor2D>, key: K, x: tf.Tensor2D, what: string): void {
    if (map.has(key)) throw new Error(`a block pass saved the same ${what}'s input twice`);
    map.set(key, this.keep(x));
  }

  private get<K>(map: Map<K, tf.Tensor2D>, key: K, what: string): tf.Tensor2D {
    const x = map.get(key);
    if (!x) throw new Error(`the block pass saved no input of this ${what}`);
    return x;
  }

  private keep<T extends tf.Tensor>(t: T): T {
    if (this.shared.has(t) || this.owned.has(t)) return t;
    this.owned.add(t);
    return tf.keep(t);
  }
}

let current: SavedActivations | null = null;

/** Runs `pass` with `store` in effect for the ops it calls. */
export function withSavedActivations<T>(store: SavedActivations, pass: () => T): T {
  const outer = current;
  current = store;
  try {
    return pass();
  } finally {
    current = outer;
  }
}

/** The store in effect, or null (no explicit backward will follow: save nothing). */
export function savedActivations(): SavedActivations | null {
  return current;
}
