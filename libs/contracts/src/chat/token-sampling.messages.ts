import type { WireError } from '../errors';
import type { InferenceWorkRouting } from './chat-completion.messages';

/**
 * Sampling from raw token ids (Tinker's `asample`): no chat template, no detokenized reply,
 * just tokens and their logprobs. Goes the way a chat completion goes: chat resolves the model
 * for the entity, checks the request, admits it against the inference workers' slots, queues it
 * on the inference work queue, and answers the RPC once the worker has sent the result.
 *
 * Logprobs (every number here is a natural log):
 * - A sampled token's `logprob` is its log-probability under the distribution it was drawn
 *   from: softmax(logits / temperature), cut by top_k and top_p and renormalised. At
 *   temperature 1 without top_k or top_p that is log_softmax(logits), the number the engine's
 *   training forward computes for the same token, so that an RL loss on the samples is exact.
 *   Tinker does the same: its sampler's logprobs follow the temperature
 *   (tinker-cookbook tests/validate_temperature_logprobs.py checks
 *   log p_T(i) - log p_T(j) = (log p_1(i) - log p_1(j)) / T); vLLM calls it processed logprobs.
 *   Temperature 0 (greedy): log_softmax(logits) of the model itself (a point mass would say 0).
 * - Prompt logprobs are the model's own, log_softmax(logits) at temperature 1, whatever the
 *   sampling parameters: what Tinker's compute_logprobs and the trainer's forward return.
 */
export interface TokenSamplingParams {
  /** Tokens to generate per sample at most; null: up to the end of the context window. */
  max_tokens: number | null;
  /** 0 is greedy. */
  temperature: number;
  /** Only the k most likely tokens; -1 (Tinker's default) or 0: off. */
  top_k: number;
  /** Nucleus mass in (0, 1]; 1: off. */
  top_p: number;
  /**
   * Stop strings (the sample ends once its decoded text contains one) or stop token ids (the
   * sample ends on one); the token that stops a sample is part of its tokens. The model's
   * end-of-sequence tokens always stop a sample.
   */
  stop: string[] | number[];
  /**
   * Same seed, same weights, same worker backend: same tokens. Any integer; sample i draws with
   * (seed mod 2^32) + i. null: random.
   */
  seed: number | null;
}

/** gateway -> chat (`chat.tokens.sample.v1`). */
export interface SampleTokensRequest {
  /** The caller's id for the request, in chat's logs. Each call samples anew: a retry is a new sampling (the same one for a given seed). */
  request_id: string;
  entity_id: string;
  entity_name: string;
  /** A serving name, as chat completions take it: a base model or one of the entity's models or checkpoints. */
  model: string;
  /** The prompt's token ids (Tinker's encoded_text chunks, concatenated); at least one. */
  prompt_tokens: number[];
  num_samples: number;
  sampling_params: TokenSamplingParams;
  /** Also return the prompt's logprobs (the first is null). */
  prompt_logprobs: boolean;
  /** Also return the k most likely tokens at each prompt position (0: none). */
  topk_prompt_logprobs: number;
}

export interface SampledTokenSequence {
  tokens: number[];
  /** One per token (see TokenSamplingParams for which distribution). */
  logprobs: number[];
  /** stop: an end-of-sequence token or a stop string or token; length: max_tokens or the context window. */
  stop_reason: 'stop' | 'length';
}

/** The k most likely tokens at one prompt position, most likely first, with their logprobs. */
export type TopkTokenLogprobs = [token: number, logprob: number][];

export interface SampleTokensResult {
  /** num_samples sequences, sample i drawn with seed + i. */
  sequences: SampledTokenSequence[];
  /** With prompt_logprobs: one per prompt token, the first null (nothing comes before it); else null. */
  prompt_logprobs: (number | null)[] | null;
  /** With topk_prompt_logprobs > 0: one entry per prompt token, the first null; else null. */
  topk_prompt_logprobs: (TopkTokenLogprobs | null)[] | null;
  /** Prompt tokens reused from the worker's prompt cache instead of prefilled (counted once, not per sample). */
  prompt_cache_hit_tokens: number;
}

/** chat -> gateway: the result, and which weights served it. */
export interface SampleTokensReply extends SampleTokensResult {
  model: string;
  base_model: string;
  /** The checkpoint step that served it; null for a base model. */
  checkpoint_step: number | null;
  model_id: string | null;
}

/** chat -> inference worker, through the inference work queue (beside chat completions). */
export interface TokenSampleWorkItem extends InferenceWorkRouting {
  kind: 'sample_tokens';
  /** The serving name, for error messages. */
  model: string;
  prompt_tokens: number[];
  num_samples: number;
  sampling_params: TokenSamplingParams;
  prompt_logprobs: boolean;
  topk_prompt_logprobs: number;
}

/** inference worker -> the chat replica waiting, on the work item's reply_subject. */
export type TokenSampleEvent =
  /** The worker took it off the queue: from now on it answers its liveness subject until it is done. */
  | { type: 'accepted' }
  | { type: 'result'; result: SampleTokensResult }
  | { type: 'error'; error: WireError };

/**
 * `${prefix}.${sampling id}`: where a token sampling's worker answers the chat replica waiting
 * for it (the work item's reply_subject; workers never build it).
 */
export const TOKEN_SAMPLE_EVENTS_PREFIX = 'chat.tokens.sample.events.v1';
