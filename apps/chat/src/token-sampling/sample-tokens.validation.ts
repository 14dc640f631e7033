import { ErrorCode, SampleTokensRequest, ServiceError, TokenSamplingParams } from '@trainyard/contracts';
import type { ModelLimits } from '@trainyard/engine/wire';

/** The bounds a token sampling is checked against (ChatConfig's, and the reply's size). */
export interface SamplingLimits {
  maxSamples: number;
  /** Most tokens per sample; also what a request without max_tokens gets. */
  maxTokens: number;
  maxTopkPromptLogprobs: number;
  maxStops: number;
  /** Most bytes the result may take as JSON: it travels as one NATS message. */
  maxResultBytes: number;
}

/** A result's JSON, per number it holds (worker logprobs carry 9 significant digits): what the size check counts. */
const BYTES_PER_SAMPLED_TOKEN = 24;
const BYTES_PER_PROMPT_LOGPROB = 16;
const BYTES_PER_TOPK_ENTRY = 26;

/**
 * Checks a token sampling's shape and bounds before anything else is done with it, and answers
 * the request with its sampling_params normalised (max_tokens set). Every refusal is an
 * invalid_request naming the Tinker field at fault (`prompt`, `num_samples`,
 * `sampling_params.max_tokens`, ...). Whatever the gateway sent, nothing here throws anything
 * but a ServiceError.
 */
export function checkSampleTokensRequest(request: SampleTokensRequest, limits: SamplingLimits): SampleTokensRequest {
  const r = (request ?? {}) as Partial<SampleTokensRequest>;
  if (typeof r.request_id !== 'string' || r.request_id.length === 0) throw ServiceError.invalid('request_id must be given', 'request_id');
  if (typeof r.model !== 'string' || r.model.length === 0) throw ServiceError.invalid('model must name a model', 'model');
  const prompt = r.prompt_tokens;
  if (!Array.isArray(prompt) || prompt.length === 0) throw ServiceError.invalid('prompt must hold at least one token', 'prompt');
  const bad = prompt.findIndex((id) => !Number.isInteger(id) || id < 0);
  if (bad >= 0) throw ServiceError.invalid(`prompt token ${bad} is ${JSON.stringify(prompt[bad])}, not a token id (an integer from 0)`, 'prompt');
  const samples = r.num_samples;
  if (!Number.isInteger(samples) || (samples as number) < 1 || (samples as number) > limits.maxSamples) {
    throw ServiceError.invalid(`num_samples must be an integer from 1 to ${limits.maxSamples}`, 'num_samples');
  }
  const params = checkSamplingParams(r.sampling_params, limits);
  if (typeof r.prompt_logprobs !== 'boolean') throw ServiceError.invalid('prompt_logprobs must be true or false', 'prompt_logprobs');
  const k = r.topk_prompt_logprobs;
  if (!Number.isInteger(k) || (k as number) < 0 || (k as number) > limits.maxTopkPromptLogprobs) {
    throw ServiceError.invalid(`topk_prompt_logprobs must be an integer from 0 to ${limits.maxTopkPromptLogprobs}`, 'topk_prompt_logprobs');
  }
  return { ...(r as SampleTokensRequest), sampling_params: params };
}

function checkSamplingParams(value: unknown, limits: SamplingLimits): TokenSamplingParams {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw ServiceError.invalid('sampling_params must be an object', 'sampling_params');
  const p = value as Partial<TokenSamplingParams>;
  const field = (name: keyof TokenSamplingParams) => `sampling_params.${name}`;
  const maxTokens = p.max_tokens ?? null;
  if (maxTokens !== null && (!Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > limits.maxTokens)) {
    throw ServiceError.invalid(`${field('max_tokens')} must be an integer from 1 to ${limits.maxTokens}`, field('max_tokens'));
  }
  const temperature = p.temperature ?? 1;
  if (typeof temperature !== 'number' || !Number.isFinite(temperature) || temperature < 0) {
    throw ServiceError.invalid(`${field('temperature')} must be a number from 0 (greedy)`, field('temperature'));
  }
  const topK = p.top_k ?? -1;
  if (!Number.isInteger(topK) || topK < -1) throw ServiceError.invalid(`${field('top_k')} must be an integer: -1 or 0 (off), or from 1`, field('top_k'));
  const topP = p.top_p ?? 1;
  if (typeof topP !== 'number' || !(topP >= 0 && topP <= 1)) throw ServiceError.invalid(`${field('top_p')} must be a number from 0 to 1`, field('top_p'));
  // Tinker also takes one stop string alone.
  const given: unknown = p.stop ?? [];
  const stop = (typeof given === 'string' ? [given] : given) as string[] | number[];
  const strings = Array.isArray(stop) && stop.every((s) => typeof s === 'string');
  const ids = Array.isArray(stop) && stop.every((s) => Number.isInteger(s) && (s as number) >= 0);
  if (!strings && !ids) throw ServiceError.invalid(`${field('stop')} must be a list of strings or a list of token ids`, field('stop'));
  if (stop.length > limits.maxStops) throw ServiceError.invalid(`${field('stop')} may hold at most ${limits.maxStops} entries`, field('stop'));
  const seed = p.seed ?? null;
  if (seed !== null && !Number.isInteger(seed)) throw ServiceError.invalid(`${field('seed')} must be an integer`, field('seed'));
  return { max_tokens: maxTokens ?? limits.maxTokens, temperature, top_k: topK, top_p: topP, stop, seed };
}

/**
 * Checks a sampling (as checkSampleTokensRequest answered it) against the model that serves it:
 * token ids within its vocabulary, a prompt that leaves room in its context window (a longer
 * max_tokens is not refused: the samples stop where the window ends, with "length", as chat
 * completions do), and a result that fits in one message.
 */
export function checkAgainstModel(request: SampleTokensRequest, model: ModelLimits, limits: SamplingLimits): void {
  const { prompt_tokens: prompt, sampling_params: params } = request;
  const bad = prompt.findIndex((id) => id >= model.vocabSize);
  if (bad >= 0) {
    throw ServiceError.invalid(`prompt token ${bad} is ${prompt[bad]}, outside the vocabulary of ${request.model} (0 to ${model.vocabSize - 1})`, 'prompt');
  }
  const badStop = params.stop.findIndex((s) => typeof s === 'number' && s >= model.vocabSize);
  if (badStop >= 0) {
    throw ServiceError.invalid(`sampling_params.stop token ${params.stop[badStop]} is outside the vocabulary of ${request.model} (0 to ${model.vocabSize - 1})`, 'sampling_params.stop');
  }
  const room = model.contextWindow - prompt.length;
  if (room < 1) {
    throw new ServiceError(
      ErrorCode.ContextLengthExceeded,
      `This model's maximum context length is ${model.contextWindow} tokens, but the prompt has ${prompt.length}, leaving no room to sample. Please shorten the prompt.`,
      { param: 'prompt' },
    );
  }
  checkResultSize(request, Math.min(params.max_tokens ?? limits.maxTokens, room), limits);
}

/** The result's JSON, estimated from its numbers, must fit in one NATS message (up to tokensPerSample tokens per sample). */
export function checkResultSize(request: SampleTokensRequest, tokensPerSample: number, limits: SamplingLimits): void {
  const positions = request.prompt_tokens.length;
  const sampled = request.num_samples * tokensPerSample * BYTES_PER_SAMPLED_TOKEN;
  const scored = (request.prompt_logprobs ? positions * BYTES_PER_PROMPT_LOGPROB : 0) + positions * request.topk_prompt_logprobs * BYTES_PER_TOPK_ENTRY;
  if (sampled + scored <= limits.maxResultBytes) return;
  const param = sampled >= scored ? 'num_samples' : 'topk_prompt_logprobs';
  throw ServiceError.invalid(
    `The result would take about ${Math.ceil((sampled + scored) / 1024)} KiB, more than one reply carries (${Math.floor(limits.maxResultBytes / 1024)} KiB): ` +
      (param === 'num_samples' ? 'lower num_samples or sampling_params.max_tokens' : 'lower topk_prompt_logprobs or send a shorter prompt'),
    param,
  );
}
