import * as tf from '@tensorflow/tfjs-core';
import type { LlamaModel } from './llama';

/**
 * log p(target_t | tokens before t) for a batch of hidden states, computed in chunks of
 * positions against the lm_head so the full [T, vocab] logits never exist at once.
 * Differentiable (log-softmax and a one-hot product, no gather), for losses in training.
 */
export function targetLogprobs(model: LlamaModel, hidden: tf.Tensor2D, targets: number[], chunk = 64): tf.Tensor1D {
  const [N] = hidden.shape;
  if (targets.length !== N) throw new Error(`${targets.length} targets for ${N} positions`);
  const V = model.config.vocabSize;
  const parts: tf.Tensor1D[] = [];
  for (let start = 0; start < N; start += chunk) {
    const n = Math.min(chunk, N - start);
    parts.push(
      tf.tidy(() => {
        const logits = model.lmHead.forward(tf.slice(hidden, [start, 0], [n, -1]));
        const oneHot = tf.oneHot(tf.tensor1d(targets.slice(start, start + n), 'int32'), V);
        return tf.sum(tf.mul(tf.logSoftmax(logits), oneHot), 1) as tf.Tensor1D;
      }),
    );
  }
  const out = parts.length === 1 ? parts[0] : tf.concat(parts);
  if (parts.length > 1) parts.forEach((p) => p.dispose());
  return out;
}

/**
 * Log-probabilities of each token of `tokens` given the ones before it (the first token has
 * none): [tokens.length - 1] numbers, what a trainer compares with sampling logprobs.
 */
export async function sequenceLogprobs(model: LlamaModel, tokens: number[], chunk = 64): Promise<Float32Array> {
  if (tokens.length < 2) return new Float32Array(0);
  const logprobs = tf.tidy(() => targetLogprobs(model, model.hidden([tokens.slice(0, -1)]), tokens.slice(1), chunk));
  try {
    return (await logprobs.data()) as Float32Array;
  } finally {
    logprobs.dispose();
  }
}
