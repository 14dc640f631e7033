import type { SortOrder } from '../registry/checkpoints.messages';
import type { ChatMessageInput, FunctionTool, ToolCallOutput } from './chat-completion.messages';
import type { EntityScope } from './stored-responses.messages';

/**
 * Stored chat completions (OpenAI's `store: true`) and the export of stored traffic as training
 * data, kept by the chat service. As for stored responses, every request names the caller's
 * entity, and an id of another entity is answered exactly like an id that does not exist.
 */

/** A sampled token as it was served: its id and the logprob it was sampled with. */
export interface ServedToken {
  token_id: number;
  token: string;
  logprob: number;
}

/** One choice as the worker produced it. */
export interface ServedChoice {
  index: number;
  message: { role: 'assistant'; content: string | null; tool_calls?: ToolCallOutput[]; reasoning_content?: string };
  finish_reason: string | null;
  /** Every completion token id, in order, exactly as sampled. */
  token_ids: number[];
  /** One per token id; null when the worker reported none. */
  logprobs: ServedToken[] | null;
}

/**
 * What a completion or a response was served, which its export trains on: the chat messages
 * and tools the model was given, the prompt's token ids, and each choice's sampled token ids
 * and logprobs.
 */
export interface ServedTrace {
  base_model: string;
  /** The trainable model that served it (null for a base model), and the checkpoint step. */
  model_id: string | null;
  checkpoint_step: number | null;
  messages: ChatMessageInput[];
  tools: FunctionTool[] | null;
  prompt_token_ids: number[];
  choices: ServedChoice[];
}

/** OpenAI's `chat.completion` object, as answered (stored ones carry their `metadata`). */
export type ChatCompletionObject = { id: string; object: 'chat.completion'; model: string; created: number } & Record<string, unknown>;

/** gateway -> chat, once a completion with `store: true` is answered and before its client sees the end of it. */
export interface StoreChatCompletionRequest extends EntityScope {
  completion: ChatCompletionObject;
  metadata: Record<string, string>;
  trace: ServedTrace;
}

/** Every pair must match (`metadata[k]=v`). */
export type MetadataPairs = Record<string, string>;

export interface ListChatCompletionsRequest extends EntityScope {
  after?: string;
  limit: number;
  order: SortOrder;
  model?: string;
  metadata?: MetadataPairs;
}

export interface ChatCompletionList {
  object: 'list';
  data: ChatCompletionObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface ChatCompletionIdRequest extends EntityScope {
  completion_id: string;
}

export interface UpdateChatCompletionRequest extends ChatCompletionIdRequest {
  metadata: Record<string, string>;
}

export interface DeleteChatCompletionReply {
  id: string;
  object: 'chat.completion.deleted';
  deleted: true;
}

/** A message of a stored completion's request, as OpenAI lists them: `{completion id}-{index}`. */
export type StoredChatMessage = ChatMessageInput & { id: string; content_parts: null };

export interface ListChatCompletionMessagesRequest extends ChatCompletionIdRequest {
  after?: string;
  limit: number;
  order: SortOrder;
}

export interface ChatCompletionMessageList {
  object: 'list';
  data: StoredChatMessage[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** Which stored traffic an export reads. */
export type ExportSource = 'chat_completions' | 'responses';

/** What an export takes: every condition given must hold. */
export interface ExportFilter {
  ids?: string[];
  model?: string;
  metadata?: MetadataPairs;
  /** Unix seconds, inclusive. */
  created_after?: number;
  /** Unix seconds, exclusive. */
  created_before?: number;
}

/** gateway -> chat: one page of an export, in the order the traffic was stored. */
export interface ExportPageRequest extends EntityScope {
  source: ExportSource;
  filter: ExportFilter;
  /** The cursor the previous page answered; null for the first. */
  after: string | null;
  /** The page holds records up to about this many bytes (always at least one). */
  max_bytes: number;
}

/** A stored completion or response as an export reads it. */
export interface ExportRecord {
  id: string;
  object: 'chat.completion' | 'response';
  /** Unix seconds. */
  created_at: number;
  model: string | null;
  metadata: Record<string, string>;
  /** Null for a response stored before traces were kept: it has no tokens to export. */
  trace: ServedTrace | null;
}

export interface ExportPageReply {
  records: ExportRecord[];
  /** The cursor of the next page; null when this page is the last. */
  next: string | null;
}
