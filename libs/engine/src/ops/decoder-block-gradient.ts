import * as tf from '@tensorflow/tfjs-core';
import { splitColumns } from '../kernels/matmul';
import { promptAttentionSaves } from '../kernels/prompt-attention';
import { ropeQkvNormedApplies } from '../kernels/rope';
import type { FrozenLinear } from '../model/linear';
import type { Attention, Block, HeadNorms, MLP, RMSNorm, StepContext } from '../model/llama';
import { attendBackward } from './attention';
import { gegluBackward } from './gelu';
import { savedAdapterColumns } from './linear';
import { linearBackward, linearBackwardThroughGate } from './linear-gradient';
import { rmsNormBackward } from './norm';
import { ropeBackward, ropeQkvBackward, ropeQkvNormedBackward } from './rope';
import { SavedActivations, withSavedActivations } from './saved-activations';
import { swigluBackward } from './swiglu';

/**
 * A decoder block (model/llama.ts, Block) differentiated by hand: its forward pass run once,
 * without a tape, saving what each op's backward reads (decoderBlockSaving), then the backward
 * written out op by op in reverse (decoderBlockBackward), each op's gradient from beside its
 * forward in ops/. A training step then runs the forward pass once, where activation
 * checkpointing would run it twice (training/checkpointing.ts).
 */

/** Block.forward on x, with each op saving into `saved` what its backward reads (the caller keeps x). */
export function decoderBlockSaving(block: Block, x: tf.Tensor2D, ctx: StepContext, saved: SavedActivations): tf.Tensor2D {
  saved.share(x);
  return withSavedActivations(saved, () => block.forward(x, ctx));
}

/**
 * Bytes decoderBlockSaving saves for `tokens` tokens (the block's input, which the caller keeps,
 * not counted), per token and layer:
 *
 * | saved | floats |
 * |---|---|
 * | q\|k\|v's input (the normed x), the norm before the MLP's input h, gate\|up's input | 3 C |
 * | attention's q and result (o's input), k and v | 2 H D + 2 KV D |
 * | the gate's input gate\|up, down's input | 3 F |
 * | q_norm's and k_norm's inputs (Qwen3, Gemma 3); where ropeQkvNormed runs them (webgpu), the q\|k\|v output it reads | (H + KV) D; (H + 2 KV) D |
 * | the norms after attention and after the MLP: their inputs (Gemma 3) | 2 C |
 * | each projection's adapters' x A, where the webgpu LoRA programs run it (ops/linear.ts) | their ranks |
 * | each query's attention statistics, where the webgpu attention saves them (ops/attention.ts) | 3 H |
 */
export function decoderBlockSavedBytes(block: Block, tokens: number): number {
  const { hiddenSize: C, intermediateSize: F, numHeads: H, numKvHeads: KV, headDim: D } = block.attention.config;
  const adapterColumns = [block.attention.qkv, block.attention.o, block.mlp.gateUp, block.mlp.down].reduce((sum, l) => sum + savedAdapterColumns(l), 0);
  const attentionStats = promptAttentionSaves(D) ? 3 * H : 0;
  const headNorms = block.attention.headNorms ? (ropeQkvNormedApplies(D) ? H + 2 * KV : H + KV) * D : 0;
  const perToken = 3 * C + 2 * H * D + 2 * KV * D + 3 * F + headNorms + (block.sandwich ? 2 * C : 0) + adapterColumns + attentionStats;
  return 4 * tokens * perToken;
}

/** What a step's block backward passes share: the step's tables and the negated sines RoPE's backward takes (one per table, made once). */
export class BlockBackwardContext {
  private readonly negated = new Map<tf.Tensor3D, tf.Tensor3D>();

  constructor(readonly step: StepContext) {}

  negatedSin(sin: tf.Tensor3D): tf.Tensor3D {
    let n = this.negated.get(sin);
    if (!n) {
      n = tf.keep(tf.neg(sin));
      this.negated.set(sin, n);
    }
    return n;
  }

  dispose(): void {
    this.negated.forEach((t) => t.dispose());
    this.negated.clear();
  }
}

/**
 * d loss / d x of the block and the gradients of its projections' trained adapter factors (by
 * factor), from the activations decoderBlockSaving saved and the output's gradient dy. Block.forward
 * in reverse:
 *
 *   y = h + post_mlp(mlp(norm_2(h)))         dh = dy + norm_2'(mlp'(post_mlp'(dy)))
 *   h = x + post_attn(attn(norm_1(x)))       dx = dh + norm_1'(attn'(post_attn'(dh)))
 *
 * (post_* are Gemma 3's norms on the outputs, identities elsewhere).
 */
export function decoderBlockBackward(block: Block, saved: SavedActivations, dy: tf.Tensor2D, ctx: BlockBackwardContext): { dx: tf.Tensor2D; grads: Map<tf.Tensor, tf.Tensor> } {
  const back = new Backward(saved, ctx);
  const dMlp = block.sandwich ? back.norm(block.sandwich.afterMlp, dy) : dy;
  const dh = back.norm(block.postAttentionNorm, back.mlp(block.mlp, dMlp), dy);
  const dAttention = block.sandwich ? back.norm(block.sandwich.afterAttention, dh) : dh;
  const dx = back.norm(block.inputNorm, back.attention(block.attention, dAttention), dh);
  return { dx, grads: back.grads };
}

/** Each part of a block backward, from its output's gradient to its input's, collecting the adapters' gradients. */
class Backward {
  readonly grads = new Map<tf.Tensor, tf.Tensor>();

  constructor(
    private readonly saved: SavedActivations,
    private readonly ctx: BlockBackwardContext,
  ) {}

  /** The norm's dx, plus `residual` where given (the residual stream's gradient past it). */
  norm(n: RMSNorm, dy: tf.Tensor2D, residual: tf.Tensor2D | null = null): tf.Tensor2D {
    return rmsNormBackward(this.saved.normInput(n.weight), n.weight, dy, n.epsilon, n.eps, residual);
  }

  linear(l: FrozenLinear, dy: tf.Tensor2D): tf.Tensor2D {
    return this.collect(linearBackward(l, this.saved.linearInput(l), dy, this.saved.adapterProduct(l))) as tf.Tensor2D;
  }

  /** y = down(act(gate) * up), gate|up = gateUp(x). */
  mlp(mlp: MLP, dy: tf.Tensor2D): tf.Tensor2D {
    const gateUp = this.saved.gateInput();
    // down's backward and the gated activation's in one kernel where there is one.
    const fused = this.collect(linearBackwardThroughGate(mlp.down, this.saved.linearInput(mlp.down), dy, this.saved.adapterProduct(mlp.down), gateUp, mlp.activation));
    if (fused) return this.linear(mlp.gateUp, fused);
    const dGated = this.linear(mlp.down, dy);
    return this.linear(mlp.gateUp, mlp.activation === 'silu' ? swigluBackward(gateUp, dGated) : gegluBackward(gateUp, dGated));
  }

  /** A linear backward's dx, its factors' gradients collected; null for null. */
  private collect(back: { dx: tf.Tensor2D; grads: Map<tf.Tensor, tf.Tensor> } | null): tf.Tensor2D | null {
    back?.grads.forEach((g, factor) => this.grads.set(factor, g));
    return back?.dx ?? null;
  }

  /** y = o(attend(rope(head_norms(q|k)), v)), q|k|v = qkv(x): Attention.forward in reverse. */
  attention(attention: Attention, dy: tf.Tensor2D): tf.Tensor2D {
    const { numHeads: H, numKvHeads: KV, headDim: D } = attention.config;
    const saved = this.saved.attention();
    const N = saved.B * saved.T;
    const [dq, dk, dv] = attendBackward(saved, this.linear(attention.o, dy));
    const { cos, sin } = attention.inputsOf(this.ctx.step);
    // RoPE's backward and the layouts (and the head norms' where the forward fused them) in one kernel where there is one.
    const norms = attention.headNorms;
    const normsInput = norms && this.saved.headNormsInput(norms);
    const fused = norms ? normsInput && ropeQkvNormedBackward(dq, dk, dv, cos, sin, normsInput, norms) : ropeQkvBackward(dq, dk, dv, cos, sin);
    if (fused) return this.linear(attention.qkv, fused);
    // k and v were laid heads-first, [B, KV, T, D]: back to token-major [N, KV * D].
    const tokenMajor = (x: tf.Tensor4D) => tf.reshape(tf.transpose(x, [0, 2, 1, 3]), [N, KV * D]) as tf.Tensor2D;
    const dRotated = tf.reshape(tf.concat([dq, tokenMajor(dk)], 1), [N, H + KV, D]) as tf.Tensor3D;
    const dqk = tf.reshape(ropeBackward(dRotated, cos, sin, this.ctx.negatedSin(sin), attention.rope.rotation), [N, (H + KV) * D]) as tf.Tensor2D;
    const dProjected = attention.headNorms ? this.headNorms(attention.headNorms, dqk, [H, KV, D]) : dqk;
    return this.linear(attention.qkv, tf.concat([dProjected, tokenMajor(dv)], 1));
  }

  /** HeadNorms.forward in reverse: each head's norm on its own rows. */
  private headNorms(norms: HeadNorms, dqk: tf.Tensor2D, [H, KV, D]: number[]): tf.Tensor2D {
    const N = dqk.shape[0];
    const [dq, dk] = splitColumns(dqk, [H * D, KV * D]);
    const perHead = (norm: RMSNorm, d: tf.Tensor2D, heads: number) => tf.reshape(this.norm(norm, tf.reshape(d, [N * heads, D])), [N, heads * D]) as tf.Tensor2D;
    return tf.concat([perHead(norms.q, dq, H), perHead(norms.k, dk, KV)], 1);
  }
}
