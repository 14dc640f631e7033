import type { WireError } from '../errors';
import type { TokenSampleWorkItem } from './token-sampling.messages';

/** A chat message as the OpenAI API carries it; text-part content is joined by the gateway. */
export interface ChatMessageInput {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | null;
  name?: string;
  tool_calls?: ToolCallOutput[];
  tool_call_id?: string;
  /** An earlier assistant turn's reasoning, as a reasoning model returned it; its template may render it. */
  reasoning_content?: string;
}

export interface ToolCallOutput {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A function the model may call; `parameters` is the JSON schema of its arguments object. */
export interface FunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

/** `none`: the tools are described to the model (its template renders them) but no call is made. */
export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/** A piece of a streamed tool call: its first piece names it, the others add argument text. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

/** OpenAI's response_format types: free text, any JSON object, JSON matching a schema. */
export const RESPONSE_FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;

/** response_format.json_schema (chat) and text.format's schema fields (responses). */
export interface JsonSchemaFormat {
  name: string;
  /** Absent: any JSON object. */
  schema?: Record<string, unknown>;
  strict?: boolean | null;
}

/** OpenAI's response_format, as the gateway validates it and the inference worker reads it. */
export type ResponseFormat = { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; json_schema: JsonSchemaFormat };

/** The sampling request after the gateway has validated and normalised it. */
export interface ChatCompletionParams {
  model: string;
  messages: ChatMessageInput[];
  temperature: number;
  top_p: number;
  /** Tokens to generate at most; the gateway resolves max_tokens / max_completion_tokens and the default. */
  max_tokens: number;
  n: number;
  stop: string[];
  seed: number | null;
  /** Report per-token logprobs; on by default for trainable models (RL needs them). */
  logprobs: boolean;
  top_logprobs: number;
  response_format: ResponseFormat;
  /** null: no tools. */
  tools: FunctionTool[] | null;
  tool_choice: ToolChoice;
  /** More than one call in a reply (OpenAI's default: true). */
  parallel_tool_calls: boolean;
  return_token_ids: boolean;
  /**
   * Variables for the model's chat template, as vLLM and SGLang take them (e.g.
   * `{enable_thinking: false}` turns a reasoning model's thinking off); null: none.
   */
  chat_template_kwargs: Record<string, unknown> | null;
}

/** gateway -> chat: schedule a completion whose events go to `reply_subject`. */
export interface StartCompletionRequest {
  completion_id: string;
  entity_id: string;
  entity_name: string;
  /** Whether the caller asked for logprobs explicitly (true/false) or left it to the default (null). */
  logprobs_requested: boolean | null;
  /**
   * The completion is stored for training (`store`): the worker reports every token's logprob
   * and the token ids, whether or not the answer shows them. Absent from older gateways.
   */
  record_tokens?: boolean;
  params: ChatCompletionParams;
  reply_subject: string;
}

export interface StartCompletionReply {
  /** The model name as the caller gave it, echoed in responses. */
  model: string;
  base_model: string;
  /** Checkpoint step that serves it, null for a base model. */
  checkpoint_step: number | null;
  model_id: string | null;
  /** Whether logprobs will be reported (explicit request, or a trainable model by default). */
  logprobs: boolean;
}

/** What every item of the inference work queue carries: its id, where to answer, which weights, until when. */
export interface InferenceWorkRouting {
  /** The work's id (a completion's, or a token sampling's request_id): cancels and liveness go by it. */
  completion_id: string;
  reply_subject: string;
  base_model: string;
  base_model_dir: string;
  /** The base model in the artifact store (ResolveModelReply.base_model_bundle); absent on items queued before it existed. */
  base_model_bundle?: string | null;
  /** The checkpoint's adapter: `bundle` is its digest in the artifact store (ResolveModelReply.adapter_bundle). */
  adapter: { bundle: string; sha256: string | null; step: number; model_id: string } | null;
  /** Epoch ms after which nobody waits for this any more: a worker drops it unstarted. */
  deadline: number;
}

/** chat -> inference worker, through the inference work queue: a chat completion. */
export interface InferenceWorkItem extends InferenceWorkRouting {
  /** Absent on items queued before token sampling existed. */
  kind?: 'chat_completion';
  params: ChatCompletionParams;
}

/** Everything the inference work queue carries: chat completions and token samplings. */
export type InferenceWork = InferenceWorkItem | TokenSampleWorkItem;

export interface TokenInfo {
  id: number;
  /** The token as text (may be a partial UTF-8 sequence rendered lossily). */
  token: string;
  bytes: number[];
  logprob: number;
  top_logprobs: { id: number; token: string; bytes: number[]; logprob: number }[];
}

/** inference worker -> gateway, on the completion's reply subject, in order. */
export type InferenceEvent =
  /** The worker took the completion off the queue: from now on it answers the completion's liveness subject. */
  | { type: 'accepted' }
  | { type: 'prompt'; prompt_tokens: number; prompt_token_ids: number[] }
  /**
   * Newly generated text of choice `index`, with the tokens sampled for it (when logprobs are
   * reported). With tools, a delta carries either message text or a piece of a tool call; a
   * token of markup alone (a call's tags) comes as a delta with neither. A reply that reasons
   * first sends its reasoning as `reasoning` deltas (with empty `text`) before its answer.
   */
  | { type: 'delta'; index: number; text: string; tokens: TokenInfo[]; tool_call?: ToolCallDelta; reasoning?: string }
  | {
      type: 'finish';
      index: number;
      finish_reason: 'stop' | 'length' | 'tool_calls';
      /** Final message content (after tool-call extraction); null when only tool calls. */
      content: string | null;
      tool_calls: ToolCallOutput[] | null;
      /** The reasoning before the answer, for a reply that reasons first (absent otherwise). */
      reasoning_content?: string;
      completion_token_ids: number[];
    }
  | {
      type: 'done';
      /** cached_tokens: prompt tokens whose keys and values were reused, not prefilled (absent from older workers). */
      usage: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
    }
  | { type: 'error'; error: WireError };

/**
 * An InferenceEvent as it travels: numbered from 0 by the worker, so that the gateway notices
 * an event lost in transit (a message bus restart) instead of returning a torn answer.
 */
export type InferenceEventMessage = InferenceEvent & { seq: number };

/**
 * gateway -> chat (no queue group: the replica that admitted it releases it): the completion is
 * over for its client, answered, failed, cancelled or timed out. Sent once per completion the
 * gateway asked chat to start, whatever the start's own outcome.
 */
export interface CompletionEnded {
  completion_id: string;
  /**
   * It ended before its worker finished (the client went away, or its answer failed): chat
   * tells the inference workers to stop generating it.
   */
  cancel?: boolean;
}

/** gateway -> chat: is a worker still generating this completion? */
export interface CompletionLivenessRequest {
  completion_id: string;
}

export interface CompletionLivenessReply {
  /** true: a worker holds it; false: none does (its worker is gone); null: no answer in time (a busy worker, a reconnecting bus). */
  alive: boolean | null;
}

/** chat -> inference workers (no queue group: the one holding it stops it). */
export interface CancelCompletion {
  completion_id: string;
}

/**
 * An inference worker's load as it tells its peers: sent whenever it changes, and every
 * second, so that a burst of completions is shared out instead of going to whichever worker
 * asks the queue first.
 */
export interface InferenceWorkerLoad {
  instance: string;
  /** Sequences it holds: decoding, or taken from the queue and being admitted. */
  held: number;
  /** Whether it has a request for work outstanding at the queue (the next completion goes to the longest waiting). */
  asking: boolean;
}
