import type { SortOrder } from '../registry/checkpoints.messages';
import type { ServedTrace } from './stored-completions.messages';

/**
 * Stored responses and conversations (OpenAI's Responses state), kept by the chat service:
 * the gateway turns HTTP into these messages and never reads the tables itself. Every
 * request names the caller's entity, and an id of another entity is answered exactly like
 * an id that does not exist.
 */
export interface EntityScope {
  entity_id: string;
}

/**
 * An item of a response's input or output, or of a conversation, in OpenAI's shape: a
 * `message`, `function_call` or `function_call_output`, always with its `id`.
 */
export type ResponseItem = { id: string; type: string } & Record<string, unknown>;

/** The `response` object as POST /v1/responses answers it. */
export type ResponseObject = { id: string; object: 'response'; output: ResponseItem[] } & Record<string, unknown>;

/** OpenAI's list of items: `first_id`/`last_id` are what `after` takes. */
export interface ItemList {
  object: 'list';
  data: ResponseItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** The page of a list of items: `after` an item's id, in `order` of being added. */
export interface ItemPageQuery {
  after?: string;
  limit: number;
  order: SortOrder;
}

/** gateway -> chat, before a response runs: what its input refers to. */
export interface ResponseContextRequest extends EntityScope {
  /** Its input and output become the earlier turns. */
  previous_response_id: string | null;
  /** Its items become the earlier turns. */
  conversation_id: string | null;
  /** Ids of the input's `item_reference` items. */
  item_ids: string[];
}

export interface ResponseContextReply {
  /** The earlier turns, oldest first: empty without previous_response_id or conversation. */
  items: ResponseItem[];
  /** The referenced items that were found (the gateway names the ones that were not). */
  references: ResponseItem[];
}

/** gateway -> chat, once a response is answered and before its client sees the end of it. */
export interface StoreResponseRequest extends EntityScope {
  /** Kept for retrieval (`store`): the response, and every input item the model was given. */
  stored: {
    response: ResponseObject;
    input_items: ResponseItem[];
    /** What the model was served, for export as training data (absent from older gateways). */
    trace?: ServedTrace;
  } | null;
  /** A conversation the response was made in: its own input items and its output are appended. */
  conversation: { id: string; items: ResponseItem[] } | null;
}

export interface ResponseIdRequest extends EntityScope {
  response_id: string;
}

export interface DeleteResponseReply {
  id: string;
  object: 'response.deleted';
  deleted: true;
}

export interface ListInputItemsRequest extends ResponseIdRequest, ItemPageQuery {}

/** OpenAI's conversation object. */
export interface ConversationRecord {
  id: string;
  object: 'conversation';
  /** Unix seconds. */
  created_at: number;
  metadata: Record<string, string>;
}

export interface CreateConversationRequest extends EntityScope {
  items: ResponseItem[];
  metadata: Record<string, string>;
}

export interface ConversationIdRequest extends EntityScope {
  conversation_id: string;
}

export interface UpdateConversationRequest extends ConversationIdRequest {
  metadata: Record<string, string>;
}

export interface DeleteConversationReply {
  id: string;
  object: 'conversation.deleted';
  deleted: true;
}

export interface ListConversationItemsRequest extends ConversationIdRequest, ItemPageQuery {}

export interface AddConversationItemsRequest extends ConversationIdRequest {
  items: ResponseItem[];
}

export interface ConversationItemRequest extends ConversationIdRequest {
  item_id: string;
}
