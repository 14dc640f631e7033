import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config';
import { decodeBlock, decodeBlockAvailable, decodeBlockFits } from '../kernels/decode-block';
import { loraKernelsApply } from '../kernels/lora';
import { DEFAULT_MATMUL_PLAN, splitColumns, type MatMulPlan, type PackedWeights } from '../kernels/matmul';
import { rmsNorm, rmsNormWithGradient } from '../kernels/rms-norm';
import { swiglu, swigluWithGradient } from '../kernels/swiglu';
import { attend } from './attention';
import { FrozenLinear, KeptProducts } from './linear';
import { KVCache, MASKED } from './kv-cache';
import { Rope } from './rope';

/**
 * A Llama-family decoder (Llama 2/3, SmolLM, Qwen2, Qwen3) written against tfjs-core ops only, so
 * the same code runs on the tensorflow, wasm and cpu backends.
 *
 * Activations are kept 2-D, [tokens, features], between blocks: every projection is a plain
 * 2-D matMul (batched matMuls leave XNNPACK's fast path and have a wrong gradient in tfjs).
 */

/** Shared by all layers of one forward pass: built once, because per-op dispatch dominates. */
export interface StepContext {
  batch: number;
  /** New tokens per row. */
  seqLen: number;
  cos: tf.Tensor3D;
  sin: tf.Tensor3D;
  /** Additive mask [batch or 1, 1, seqLen, keys]. */
  mask: tf.Tensor4D;
  cache: KVCache | null;
  /**
   * Set when only the gradients of this pass are used, never its output (activation
   * checkpointing's recompute): a block then skips what only its output needs, the down
   * projection's product.
   */
  outputUnread?: boolean;
  /** Projections' outputs kept from a checkpointed step's first pass for its recompute (KeptProducts). */
  products?: KeptProducts;
}

export class RMSNorm {
  constructor(
    readonly weight: tf.Tensor1D,
    /** epsilon as a tensor, shared by the model's norms, and as a number, for the fused kernels. */
    private readonly eps: tf.Scalar,
    readonly epsilon: number,
  ) {}

  forward(x: tf.Tensor2D): tf.Tensor2D {
    // One kernel instead of six on wasm (with a backward kernel under a gradient tape), one dispatch instead of five on webgpu (kernels/rms-norm.ts).
    const fused = tf.engine().isTapeOn() ? rmsNormWithGradient(x, this.weight, this.epsilon) : rmsNorm(x, this.weight, this.epsilon);
    if (fused) return fused;
    const meanSquare = tf.mean(tf.square(x), -1, true);
    return tf.mul(tf.mul(x, tf.rsqrt(tf.add(meanSquare, this.eps))), this.weight);
  }
}

/** Qwen3's q_norm and k_norm: an RMSNorm over each head of the queries, and one over each head of the keys. */
export class HeadNorms {
  constructor(
    readonly q: RMSNorm,
    readonly k: RMSNorm,
    private readonly config: ModelConfig,
  ) {}

  /** qk: the queries' and keys' heads side by side, [N, (H + KV) * D]. */
  forward(qk: tf.Tensor2D): tf.Tensor2D {
    const { numHeads: H, numKvHeads: KV, headDim: D } = this.config;
    const N = qk.shape[0];
    const [q, k] = splitColumns(qk, [H * D, KV * D]);
    const perHead = (norm: RMSNorm, x: tf.Tensor2D, heads: number) => tf.reshape(norm.forward(tf.reshape(x, [N * heads, D])), [N, heads * D]) as tf.Tensor2D;
    return tf.concat([perHead(this.q, q, H), perHead(this.k, k, KV)], 1);
  }

  dispose(): void {
    this.q.weight.dispose();
    this.k.weight.dispose();
  }
}

export class Attention {
  constructor(
    readonly config: ModelConfig,
    readonly layer: number,
    private readonly rope: Rope,
    /** q_proj | k_proj | v_proj fused. */
    readonly qkv: FrozenLinear,
    readonly o: FrozenLinear,
    /** Qwen3's q_norm and k_norm; null for the families without them. */
    readonly headNorms: HeadNorms | null = null,
  ) {}

  forward(x: tf.Tensor2D, ctx: StepContext): tf.Tensor2D {
    const { numHeads: H, numKvHeads: KV, headDim: D } = this.config;
    const { batch: B, seqLen: T } = ctx;
    const N = B * T;

    const [projected, vFlat] = splitColumns(this.qkv.forward(x, { kept: ctx.products }), [(H + KV) * D, KV * D]);
    const qk = this.headNorms ? this.headNorms.forward(projected) : projected;
    // q and k heads side by side: one rotation for both (q carries the 1/sqrt(D) scale).
    const rotated = tf.reshape(this.rope.apply(tf.reshape(qk, [N, H + KV, D]), ctx.cos, ctx.sin), [N, (H + KV) * D]) as tf.Tensor2D;
    const [qFlat, kFlat] = splitColumns(rotated, [H * D, KV * D]);

    let k = toHeadsFirst(tf.reshape(kFlat, [B, T, KV, D]));
    let v = toHeadsFirst(tf.reshape(vFlat, [B, T, KV, D]));
    if (ctx.cache) ({ k, v } = ctx.cache.append(this.layer, k, v));
    // The recompute takes the first pass's attention output where it was kept (its gradient
    // is still the kernel's, from q, k and v); the first pass keeps it.
    const heads = attend(qFlat, k, v, ctx.mask, { B, H, T, cached: ctx.cache !== null }, ctx.products?.take(this) ?? null);
    ctx.products?.keep(this, heads);
    return this.o.forward(heads, { kept: ctx.products });
  }
}

/** [B, T, KV, D] -> [B, KV, T, D]; a free reshape when T is 1. */
function toHeadsFirst(x: tf.Tensor4D): tf.Tensor4D {
  const [B, T, KV, D] = x.shape;
  return T === 1 ? tf.reshape(x, [B, KV, 1, D]) : tf.transpose(x, [0, 2, 1, 3]);
}

/** SwiGLU: down(silu(gate(x)) * up(x)). */
export class MLP {
  constructor(
    /** gate_proj | up_proj fused. */
    readonly gateUp: FrozenLinear,
    readonly down: FrozenLinear,
  ) {}

  /** outputUnread: only gradients through this are used (StepContext.outputUnread); products: StepContext.products. */
  forward(x: tf.Tensor2D, outputUnread = false, products?: KeptProducts): tf.Tensor2D {
    const gateUp = this.gateUp.forward(x, { kept: products });
    // Inference on wasm: one kernel instead of four (kernels/swiglu.ts).
    // Training on wasm: the same kernel with a gradient of its own.
    const gated = tf.engine().isTapeOn() ? swigluWithGradient(gateUp) : swiglu(gateUp);
    if (gated) return this.down.forward(gated, { valueUnread: outputUnread });
    const [gate, up] = splitColumns(gateUp, [gateUp.shape[1] / 2, gateUp.shape[1] / 2]);
    return this.down.forward(tf.mul(tf.mul(gate, tf.sigmoid(gate)), up), { valueUnread: outputUnread });
  }
}

export class Block {
  constructor(
    readonly inputNorm: RMSNorm,
    readonly attention: Attention,
    readonly postAttentionNorm: RMSNorm,
    readonly mlp: MLP,
  ) {}

  forward(x: tf.Tensor2D, ctx: StepContext): tf.Tensor2D {
    const decoded = this.decodeInOneCall(x, ctx);
    if (decoded) return decoded;
    const h: tf.Tensor2D = tf.add(x, this.attention.forward(this.inputNorm.forward(x), ctx));
    return tf.add(h, this.mlp.forward(this.postAttentionNorm.forward(h), ctx.outputUnread === true, ctx.products));
  }

  /**
   * A decoding step (one token per row) through this block as one call on wasm
   * (kernels/decode-block.ts): the same kernels as forward's steps, in the same order, for the
   * same bits, without tfjs's dispatch between them, low-rank adapters included (one for every
   * row, or several routed row by row: LoraRouter). Null where it does not apply: not one token
   * per row, no cached column to write in place, an adapter that is not low-rank, another
   * backend or a gradient being recorded, or a block with norms the kernel does not compute
   * (Qwen3's q_norm and k_norm).
   */
  private decodeInOneCall(x: tf.Tensor2D, ctx: StepContext): tf.Tensor2D | null {
    const { config, layer } = this.attention;
    if (this.attention.headNorms || !ctx.cache || ctx.seqLen !== 1 || !decodeBlockAvailable() || !decodeBlockFits(config.hiddenSize, config.intermediateSize, config.headDim)) return null;
    const target = ctx.cache.appendTarget(layer);
    if (!target) return null;
    // x stands for every projection's input here: the kernels need only its dtype, and widths that decodeBlockFits checked.
    const [qkv, o, gateUp, down] = [this.attention.qkv, this.attention.o, this.mlp.gateUp, this.mlp.down].map((linear) => {
      const product = linear.inferenceProduct(x.shape[0]);
      return product && (product.lora.length === 0 || loraKernelsApply(x, product.lora)) ? product : null;
    });
    if (!qkv || !o || !gateUp || !down) return null;
    return decodeBlock(
      x,
      { inputNorm: this.inputNorm.weight, postAttentionNorm: this.postAttentionNorm.weight, eps: this.inputNorm.epsilon, qkv, o, gateUp, down, plan: this.attention.qkv.matmulPlan },
      { heads: config.numHeads, kvHeads: config.numKvHeads, headDim: config.headDim, cos: ctx.cos, sin: ctx.sin, mask: ctx.mask, keys: target.k, values: target.v, column: target.column },
    );
  }
}

/** Everything a LlamaModel is made of; the loader fills it from a checkpoint. */
export interface LlamaParts {
  /** Token embeddings [vocab, hidden], kept in JS memory: lookups are row copies. */
  embedding: Float32Array;
  blocks: Block[];
  finalNorm: RMSNorm;
  /** lm_head (the embedding, transposed, when tied). */
  lmHead: FrozenLinear;
  rope: Rope;
  /** Tensors shared by the parts (eps scalar...), disposed with the model. */
  extra: tf.Tensor[];
}

export interface ForwardOptions {
  /** Continue these sequences (one row each) and append the new tokens to it. */
  cache?: KVCache;
  /** Only the last position of each row: what decoding needs. */
  lastOnly?: boolean;
}

export class LlamaModel {
  readonly blocks: Block[];
  readonly finalNorm: RMSNorm;
  readonly lmHead: FrozenLinear;
  private readonly embedding: Float32Array;
  private readonly rope: Rope;
  private readonly extra: tf.Tensor[];
  private plan: Readonly<MatMulPlan> = DEFAULT_MATMUL_PLAN;

  constructor(
    readonly config: ModelConfig,
    parts: LlamaParts,
  ) {
    this.embedding = parts.embedding;
    this.blocks = parts.blocks;
    this.finalNorm = parts.finalNorm;
    this.lmHead = parts.lmHead;
    this.rope = parts.rope;
    this.extra = parts.extra;
  }

  /**
   * Logits for `tokens` (rows of equal length): [rows * T, vocab], or [rows, vocab] with
   * lastOnly. With a cache, the rows continue its sequences and the cache grows by T.
   */
  forward(tokens: number[][], options: ForwardOptions = {}): tf.Tensor2D {
    return tf.tidy(() => {
      const hidden = this.hidden(tokens, options);
      return this.lmHead.forward(hidden);
    });
  }

  /**
   * Final normed hidden states [rows * T, hidden] (or [rows, hidden] with lastOnly).
   * Differentiable w.r.t. adapter variables: the embedding lookup is a constant input.
   */
  hidden(tokens: number[][], options: ForwardOptions = {}): tf.Tensor2D {
    const B = tokens.length;
    const T = tokens[0]?.length ?? 0;
    if (B === 0 || T === 0 || tokens.some((r) => r.length !== T)) throw new Error('forward needs rows of equal, non-zero length');
    const cache = options.cache ?? null;
    if (cache && cache.rows !== B) throw new Error(`cache has ${cache.rows} rows, got ${B}`);

    let ctx: StepContext;
    if (cache) {
      const step = cache.beginStep(T);
      ctx = { batch: B, seqLen: T, ...this.rope.tables(step.positions.flat()), mask: step.mask, cache };
    } else {
      ctx = this.passContext(B, T);
    }

    let x = this.embed(tokens.flat());
    // One scope per block: a block's intermediates (about 12 MB per layer for a 128-token
    // prompt on a 135M model) are freed as soon as it is done instead of at the end of the
    // whole forward pass, which bounds the wasm heap's high-water mark. Under a gradient tape
    // this is safe too: tfjs keeps its own clones of what the backward pass needs.
    for (const block of this.blocks) {
      const input = x;
      x = tf.tidy(() => block.forward(input, ctx));
    }
    cache?.endStep(T);
    if (options.lastOnly && T > 1) {
      x = tf.gather(x, tf.tensor1d(range(B).map((b) => b * T + T - 1), 'int32'));
    }
    return this.finalNorm.forward(x);
  }

  /**
   * What every block of an uncached pass over B rows of T tokens shares: rope tables for
   * positions 0..T-1 and the causal mask. Blocks can then be run one at a time
   * (block.forward(x, ctx)), as activation checkpointing does; the caller disposes the tensors.
   */
  passContext(B: number, T: number): StepContext {
    const { cos, sin } = this.rope.tables(Array.from({ length: B }, () => range(T)).flat());
    return { batch: B, seqLen: T, cos, sin, mask: causalMask(T), cache: null };
  }

  /** Rows of the embedding table, copied in JS: no gather kernel (and no gather gradient). */
  embed(ids: number[]): tf.Tensor2D {
    return tf.tensor2d(this.embeddingRows(ids), [ids.length, this.config.hiddenSize]);
  }

  /** The embedding table's rows for `ids`, [ids, hidden] row-major. */
  embeddingRows(ids: readonly number[]): Float32Array {
    const C = this.config.hiddenSize;
    const out = new Float32Array(ids.length * C);
    ids.forEach((id, i) => {
      if (!(id >= 0 && id < this.config.vocabSize)) throw new Error(`token id ${id} out of range [0, ${this.config.vocabSize})`);
      out.set(this.embedding.subarray(id * C, (id + 1) * C), i * C);
    });
    return out;
  }

  newCache(): KVCache {
    return new KVCache(this.config.numLayers);
  }

  /** Every frozen projection by HF module name, e.g. "model.layers.3.self_attn.qkv". */
  linears(): { name: string; layer: number; linear: FrozenLinear }[] {
    return this.blocks.flatMap((b, i) => [
      { name: `model.layers.${i}.self_attn.qkv`, layer: i, linear: b.attention.qkv },
      { name: `model.layers.${i}.self_attn.o_proj`, layer: i, linear: b.attention.o },
      { name: `model.layers.${i}.mlp.gate_up`, layer: i, linear: b.mlp.gateUp },
      { name: `model.layers.${i}.mlp.down_proj`, layer: i, linear: b.mlp.down },
    ]);
  }

  /** Every projection's weight in the matmul kernel's layout, in the order a forward pass uses them (none where the kernel does not apply). */
  packedWeights(): PackedWeights[] {
    return [...this.linears().map((l) => l.linear), this.lmHead].flatMap((l) => l.packedWeights() ?? []);
  }

  /**
   * How the matmul kernel runs over this model's weights (kernels/matmul.ts): the loader
   * times it on them (tuneMatMul) or fixes it; each model keeps its own, since the fastest
   * depends on the weights' sizes and format. The same products to the bit under any plan.
   */
  get matmulPlan(): Readonly<MatMulPlan> {
    return this.plan;
  }

  set matmulPlan(plan: MatMulPlan) {
    this.plan = Object.freeze({ ...plan });
    for (const linear of [...this.linears().map((l) => l.linear), this.lmHead]) linear.matmulPlan = this.plan;
  }

  dispose(): void {
    for (const { linear } of this.linears()) linear.dispose();
    for (const b of this.blocks) {
      b.attention.headNorms?.dispose();
      b.inputNorm.weight.dispose();
      b.postAttentionNorm.weight.dispose();
    }
    this.finalNorm.weight.dispose();
    this.lmHead.dispose();
    this.rope.dispose();
    for (const t of this.extra) t.dispose();
  }
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** [1, 1, T, T], broadcast over rows and heads. */
function causalMask(T: number): tf.Tensor4D {
  const m = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) m[i * T + j] = MASKED;
  return tf.tensor4d(m, [1, 1, T, T]);
}
