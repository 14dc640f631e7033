import * as tf from '@tensorflow/tfjs-core';
import type { HiddenAct, ModelConfig } from '../config';
import { DEFAULT_MATMUL_PLAN, splitColumns, type MatMulPlan, type PackedWeights } from '../kernels/matmul';
import { attend, decoderBlock, embed, geglu, rmsNorm, ropeQkv, ropeQkvNormed, swiglu } from '../ops';
import type { EmbeddingTable } from './embedding';
import { FrozenLinear } from './linear';
import { KeptConstants } from './kept-constants';
import { KVCache, MASKED } from './kv-cache';
import { Rope } from './rope';

/**
 * A Llama-family decoder (Llama 2/3, SmolLM, Qwen2, Qwen3, Gemma 3): what each layer computes.
 * The ops it is written in (ops/) choose how: a WebAssembly kernel, a WGSL program or tfjs ops,
 * with or without a gradient, so the same code runs on the tensorflow, wasm, webgpu and cpu
 * backends.
 *
 * Activations are kept 2-D, [tokens, features], between blocks: every projection is a plain
 * 2-D matMul (batched matMuls leave XNNPACK's fast path and have a wrong gradient in tfjs).
 */

/** What an attention layer attends with: RoPE tables for the step's positions and the additive mask. */
export interface AttentionInputs {
  cos: tf.Tensor3D;
  sin: tf.Tensor3D;
  /** Additive mask [batch or 1, 1, seqLen, keys]. */
  mask: tf.Tensor4D;
}

/** Shared by all layers of one forward pass: built once, because per-op dispatch dominates. */
export interface StepContext extends AttentionInputs {
  batch: number;
  /** New tokens per row. */
  seqLen: number;
  cache: KVCache | null;
  /** The sliding-window layers' tables (their own RoPE base) and mask (ModelConfig.slidingWindow); absent without such layers. */
  sliding?: AttentionInputs;
}

export class RMSNorm {
  constructor(
    readonly weight: tf.Tensor1D,
    /** epsilon as a tensor, shared by the model's norms, and as a number, for the fused kernels. */
    readonly eps: tf.Scalar,
    readonly epsilon: number,
  ) {}

  /** x / sqrt(mean(x^2) + eps) * weight, over each row. */
  forward(x: tf.Tensor2D): tf.Tensor2D {
    return rmsNorm(x, this.weight, this.epsilon, this.eps);
  }
}

/** Qwen3's and Gemma 3's q_norm and k_norm: an RMSNorm over each head of the queries, and one over each head of the keys. */
export class HeadNorms {
  private both: tf.Tensor1D | null = null;

  constructor(
    readonly q: RMSNorm,
    readonly k: RMSNorm,
    private readonly config: ModelConfig,
  ) {}

  /** q_norm's then k_norm's weights side by side [2 D], as the fused q|k|v kernels (ops/rope.ts) and the webgpu decoding step take them; made on first use. */
  get weights(): tf.Tensor1D {
    this.both ??= tf.keep(tf.concat([this.q.weight, this.k.weight]));
    return this.both;
  }

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
    this.both?.dispose();
    this.both = null;
  }
}

export class Attention {
  /** Whether this layer attends within the sliding window (ModelConfig.slidingWindow), with StepContext.sliding's tables and mask. */
  readonly windowed: boolean;

  constructor(
    readonly config: ModelConfig,
    readonly layer: number,
    readonly rope: Rope,
    /** q_proj | k_proj | v_proj fused. */
    readonly qkv: FrozenLinear,
    readonly o: FrozenLinear,
    /** Qwen3's and Gemma 3's q_norm and k_norm; null for the families without them. */
    readonly headNorms: HeadNorms | null = null,
  ) {
    this.windowed = config.slidingWindow?.layers[layer] === true;
  }

  /** The RoPE tables and mask this layer attends with. */
  inputsOf(ctx: StepContext): AttentionInputs {
    if (!this.windowed) return ctx;
    if (!ctx.sliding) throw new Error(`layer ${this.layer} attends within a sliding window, and the step has no mask for it`);
    return ctx.sliding;
  }

  forward(x: tf.Tensor2D, ctx: StepContext): tf.Tensor2D {
    const { batch: B, seqLen: T } = ctx;
    const { mask } = this.inputsOf(ctx);
    const [q, kNew, vNew] = this.queriesKeysValues(this.qkv.forward(x), ctx);
    // With a cache, the keys and values before these tokens too.
    const { k, v } = ctx.cache ? ctx.cache.append(this.layer, kNew, vNew) : { k: kNew, v: vNew };
    const heads = attend(q, k, v, mask, { B, H: this.config.numHeads, T, cached: ctx.cache !== null });
    return this.o.forward(heads);
  }

  /** q, rotated and token-major [N, H*D]; k, rotated, and v heads-first [B, KV, T, D]: from q|k|v's projection output. */
  private queriesKeysValues(projected: tf.Tensor2D, ctx: StepContext): [tf.Tensor2D, tf.Tensor4D, tf.Tensor4D] {
    const { numHeads: H, numKvHeads: KV, headDim: D } = this.config;
    const { batch: B, seqLen: T } = ctx;
    const N = B * T;
    const { cos, sin } = this.inputsOf(ctx);
    // The whole of it is one kernel where there is one (ops/rope.ts), head norms included.
    const fused = this.headNorms ? ropeQkvNormed(projected, cos, sin, this.headNorms, KV, T) : ropeQkv(projected, cos, sin, KV, T);
    if (fused) return fused;

    const [qk, vFlat] = splitColumns(projected, [(H + KV) * D, KV * D]);
    const normed = this.headNorms ? this.headNorms.forward(qk) : qk;
    // q and k heads side by side: one rotation for both (q carries the attention scale).
    const rotated = tf.reshape(this.rope.apply(tf.reshape(normed, [N, H + KV, D]), cos, sin), [N, (H + KV) * D]) as tf.Tensor2D;
    const [q, kFlat] = splitColumns(rotated, [H * D, KV * D]);
    return [q, toHeadsFirst(tf.reshape(kFlat, [B, T, KV, D])), toHeadsFirst(tf.reshape(vFlat, [B, T, KV, D]))];
  }
}

/** [B, T, KV, D] -> [B, KV, T, D]; a free reshape when T is 1. */
function toHeadsFirst(x: tf.Tensor4D): tf.Tensor4D {
  const [B, T, KV, D] = x.shape;
  return T === 1 ? tf.reshape(x, [B, KV, 1, D]) : tf.transpose(x, [0, 2, 1, 3]);
}

/** A gated MLP, down(act(gate(x)) * up(x)): SwiGLU (act = SiLU), or Gemma's GeGLU (act = GELU, tanh approximation). */
export class MLP {
  constructor(
    /** gate_proj | up_proj fused. */
    readonly gateUp: FrozenLinear,
    readonly down: FrozenLinear,
    readonly activation: HiddenAct = 'silu',
  ) {}

  forward(x: tf.Tensor2D): tf.Tensor2D {
    const gateUp = this.gateUp.forward(x);
    return this.down.forward(this.activation === 'silu' ? swiglu(gateUp) : geglu(gateUp));
  }
}

/** Gemma 3's norms on the attention's and the MLP's outputs, before each residual add (HF's post_attention_layernorm and post_feedforward_layernorm). */
export interface SandwichNorms {
  afterAttention: RMSNorm;
  afterMlp: RMSNorm;
}

export class Block {
  constructor(
    readonly inputNorm: RMSNorm,
    readonly attention: Attention,
    /** The norm before the MLP (HF's post_attention_layernorm in Llama, pre_feedforward_layernorm in Gemma 3). */
    readonly postAttentionNorm: RMSNorm,
    readonly mlp: MLP,
    /** Gemma 3's; null for the families without them. */
    readonly sandwich: SandwichNorms | null = null,
  ) {}

  forward(x: tf.Tensor2D, ctx: StepContext): tf.Tensor2D {
    const h: tf.Tensor2D = tf.add(x, this.afterAttention(this.attention.forward(this.inputNorm.forward(x), ctx)));
    return tf.add(h, this.afterMlp(this.mlp.forward(this.postAttentionNorm.forward(h))));
  }

  /**
   * The projection whose output feeds nothing but the block's residual sum, or null: a pass that
   * needs only gradients through the block (activation checkpointing's recompute) may skip its
   * product, since no gradient reads its value. Gemma 3's norm after the MLP reads it.
   */
  get residualProjection(): FrozenLinear | null {
    return this.sandwich ? null : this.mlp.down;
  }

  /**
   * Whether this is the block kernels/decode-block.ts computes: two norms, no q_norm or k_norm
   * (Qwen3, Gemma 3), no norms on the outputs (Gemma 3), a SwiGLU MLP (not Gemma's GeGLU).
   * Its mask and RoPE tables are the layer's own, sliding window or not.
   */
  get isLlamaBlock(): boolean {
    return !this.attention.headNorms && !this.sandwich && this.mlp.activation === 'silu';
  }

  private afterAttention(y: tf.Tensor2D): tf.Tensor2D {
    return this.sandwich ? this.sandwich.afterAttention.forward(y) : y;
  }

  private afterMlp(y: tf.Tensor2D): tf.Tensor2D {
    return this.sandwich ? this.sandwich.afterMlp.forward(y) : y;
  }
}

/** Everything a LlamaModel is made of; the loader fills it from a checkpoint. */
export interface LlamaParts {
  /** Token embeddings [vocab, hidden], kept in JS memory in the checkpoint's dtype: lookups are row copies. */
  embedding: EmbeddingTable;
  blocks: Block[];
  finalNorm: RMSNorm;
  /** lm_head (the embedding, transposed, when tied). */
  lmHead: FrozenLinear;
  rope: Rope;
  /** The sliding-window layers' RoPE (ModelConfig.slidingWindow's base); null without such layers. */
  slidingRope: Rope | null;
  /** What embedding rows are multiplied by (Gemma's sqrt(hidden) in the embedding's dtype); 1 for the families that do not scale them. */
  embeddingScale: number;
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
  readonly embedding: EmbeddingTable;
  /** What embedding rows are multiplied by (LlamaParts.embeddingScale). */
  readonly embeddingScale: number;
  private readonly rope: Rope;
  private readonly slidingRope: Rope | null;
  private readonly extra: tf.Tensor[];
  private plan: Readonly<MatMulPlan> = DEFAULT_MATMUL_PLAN;
  /** What was made for this model elsewhere and goes with it (the webgpu decoding step): released first by dispose(). */
  private readonly releases = new Set<() => void>();
  /** An uncached pass's causal masks of at least KEPT_MASKS_FROM_TOKENS, [1, 1, T, T] (16 MB at 2,048 tokens), kept by T and window. */
  private readonly masks = new KeptConstants<{ mask: tf.Tensor4D }>(4);

  constructor(
    readonly config: ModelConfig,
    parts: LlamaParts,
  ) {
    this.embedding = parts.embedding;
    this.embeddingScale = parts.embeddingScale;
    this.blocks = parts.blocks;
    this.finalNorm = parts.finalNorm;
    this.lmHead = parts.lmHead;
    this.rope = parts.rope;
    this.slidingRope = parts.slidingRope;
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
      const positions = step.positions.flat();
      const sliding = this.slidingInputs(positions, () => cache.windowMask(T, this.config.slidingWindow?.size ?? Infinity));
      ctx = { batch: B, seqLen: T, ...this.rope.tables(positions), mask: step.mask, cache, ...sliding };
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
      x = tf.tidy(() => decoderBlock(block, input, ctx));
    }
    cache?.endStep(T);
    if (options.lastOnly && T > 1) {
      x = tf.gather(x, tf.tensor1d(range(B).map((b) => b * T + T - 1), 'int32'));
    }
    return this.finalNorm.forward(x);
  }

  /**
   * What every block of an uncached pass over B rows of T tokens shares: rope tables for
   * positions 0..T-1 and the causal mask (clones of tensors the model keeps for the next pass of
   * the same shape, KeptConstants). Blocks can then be run one at a time (block.forward(x,
   * ctx)), as activation checkpointing does; the caller disposes the tensors.
   */
  passContext(B: number, T: number): StepContext {
    const positions = Array.from({ length: B }, () => range(T)).flat();
    const { cos, sin } = this.rope.tables(positions);
    const mask = (window = Infinity) => (T < KEPT_MASKS_FROM_TOKENS ? causalMask(T, window) : this.masks.get([T, window], () => ({ mask: causalMask(T, window) })).mask);
    const sliding = this.slidingInputs(positions, () => mask(this.config.slidingWindow?.size));
    return { batch: B, seqLen: T, cos, sin, mask: mask(), cache: null, ...sliding };
  }

  /** StepContext.sliding for these positions, with `mask()` as its mask; nothing without sliding-window layers. */
  private slidingInputs(positions: number[], mask: () => tf.Tensor4D): Pick<StepContext, 'sliding'> {
    return this.slidingRope ? { sliding: { ...this.slidingRope.tables(positions), mask: mask() } } : {};
  }

  /** The embeddings of `ids`, [ids, hidden], times the model's embedding scale (ops/embedding.ts; no gradient). */
  embed(ids: number[]): tf.Tensor2D {
    return embed(this.embedding, ids, this.embeddingScale, this.config.tieWordEmbeddings ? this.lmHead : null);
  }

  /** The embedding table's rows for `ids` (times the model's embedding scale), [ids, hidden] row-major. */
  embeddingRows(ids: readonly number[]): Float32Array {
    return this.embedding.rows(ids, this.embeddingScale);
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

  /** Calls `release` when the model is disposed; the function returned forgets it. */
  onDispose(release: () => void): () => void {
    this.releases.add(release);
    return () => this.releases.delete(release);
  }

  dispose(): void {
    for (const release of [...this.releases]) release();
    this.releases.clear();
    for (const { linear } of this.linears()) linear.dispose();
    for (const b of this.blocks) {
      b.attention.headNorms?.dispose();
      b.inputNorm.weight.dispose();
      b.postAttentionNorm.weight.dispose();
      b.sandwich?.afterAttention.weight.dispose();
      b.sandwich?.afterMlp.weight.dispose();
    }
    this.finalNorm.weight.dispose();
    this.lmHead.dispose();
    this.embedding.dispose();
    this.rope.dispose();
    this.slidingRope?.dispose();
    this.masks.dispose();
    for (const t of this.extra) t.dispose();
  }
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** The tensors a StepContext made by LlamaModel holds (tables and masks), for the caller that disposes them. */
export function contextTensors(ctx: StepContext): tf.Tensor[] {
  return [ctx.cos, ctx.sin, ctx.mask, ...(ctx.sliding ? [ctx.sliding.cos, ctx.sliding.sin, ctx.sliding.mask] : [])];
}

/** An uncached pass's causal masks of fewer tokens are made at each pass; longer ones are kept (LlamaModel.masks). */
const KEPT_MASKS_FROM_TOKENS = 32;

/** [1, 1, T, T], broadcast over rows and heads: token i sees tokens j <= i, and only i - window < j with a window. */
function causalMask(T: number, window = Infinity): tf.Tensor4D {
  const m = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) if (j > i || j <= i - window) m[i * T + j] = MASKED;
  return tf.tensor4d(m, [1, 1, T, T]);
}
