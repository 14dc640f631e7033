import * as tf from '@tensorflow/tfjs-core';
import { decodeBlock, decodeBlockAvailable, decodeBlockFits } from '../kernels/decode-block';
import { loraKernelsApply } from '../kernels/lora';
import type { Block, StepContext } from '../model/llama';
import { packedProjection } from './linear';

/**
 * A decoder block's forward for the pass at hand. A decoding step (one token per row) runs on
 * wasm as one call (kernels/decode-block.ts): the same kernels as Block.forward's ops, in the
 * same order, for the same bits, without tfjs's dispatch between them, low-rank adapters
 * included (one for every row, or several routed row by row: LoraRouter). Everything else runs
 * Block.forward.
 */
export function decoderBlock(block: Block, x: tf.Tensor2D, ctx: StepContext): tf.Tensor2D {
  return decodeInOneCall(block, x, ctx) ?? block.forward(x, ctx);
}

/**
 * The block as one call, or null where that does not apply: not one token per row, no cached
 * column to write in place, an adapter that is not low-rank, another backend or a gradient being
 * recorded, or a block other than the Llama/Qwen2 one the kernel computes (Block.isLlamaBlock).
 */
function decodeInOneCall(block: Block, x: tf.Tensor2D, ctx: StepContext): tf.Tensor2D | null {
  const { attention, mlp } = block;
  const { config, layer } = attention;
  if (!block.isLlamaBlock || !ctx.cache || ctx.seqLen !== 1 || !decodeBlockAvailable() || !decodeBlockFits(config.hiddenSize, config.intermediateSize, config.headDim)) return null;
  const target = ctx.cache.appendTarget(layer);
  if (!target) return null;
  // x stands for every projection's input here: the kernels need only its dtype, and widths that decodeBlockFits checked.
  const [qkv, o, gateUp, down] = [attention.qkv, attention.o, mlp.gateUp, mlp.down].map((linear) => {
    const product = packedProjection(linear, x.shape[0]);
    return product && (product.lora.length === 0 || loraKernelsApply(x, product.lora)) ? product : null;
  });
  if (!qkv || !o || !gateUp || !down) return null;
  const { cos, sin, mask } = attention.inputsOf(ctx);
  return decodeBlock(
    x,
    { inputNorm: block.inputNorm.weight, postAttentionNorm: block.postAttentionNorm.weight, eps: block.inputNorm.epsilon, qkv, o, gateUp, down, plan: attention.qkv.matmulPlan },
    { heads: config.numHeads, kvHeads: config.numKvHeads, headDim: config.headDim, cos, sin, mask, keys: target.k, values: target.v, column: target.column },
  );
}
