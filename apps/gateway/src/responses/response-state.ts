import { Injectable } from '@nestjs/common';
import { ErrorCode, ResponseItem, ResponseObject, ServedTrace, ServiceError, StoreResponseRequest, Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import type { Caller } from '../auth/caller';
import type { CreateResponseRequest } from './dto/create-response.request';
import { PlacedItem, toInputEntries } from './response-items';

/** The most a store request may be: one NATS message (1 MiB), less room for its headers. */
export const MAX_STORE_BYTES = 1000 * 1024;

/** A response's input: the earlier turns it continues, and its own items (references resolved). */
export interface ResponseInput {
  earlier: PlacedItem[];
  own: PlacedItem[];
}

/** `conversation` as its id. */
export function conversationIdOf(conversation: CreateResponseRequest['conversation']): string | null {
  if (conversation == null) return null;
  return typeof conversation === 'string' ? conversation : conversation.id;
}

/**
 * A response's side of the stored state, which the chat service keeps: before it runs, the
 * earlier turns it continues (`previous_response_id`, `conversation`) and the stored items its
 * `item_reference`s name; once it is answered, what is kept of it (`store`, on by default)
 * and what it adds to its conversation. A request that names nothing stored asks nothing.
 */
@Injectable()
export class ResponseState {
  constructor(private readonly rpc: RpcClient) {}

  async input(caller: Caller, body: CreateResponseRequest): Promise<ResponseInput> {
    const entries = toInputEntries(body.input);
    const previous = body.previous_response_id ?? null;
    const conversation = conversationIdOf(body.conversation);
    if (previous !== null && conversation !== null) {
      throw ServiceError.invalid('previous_response_id and conversation cannot be used together: a response continues one or the other', 'conversation');
    }
    const references = entries.flatMap((entry) => ('reference' in entry ? [entry.reference] : []));
    if (previous === null && conversation === null && references.length === 0) {
      return { earlier: [], own: entries as PlacedItem[] };
    }
    const context = await this.rpc.request(Subjects.chat.responseContext, {
      entity_id: caller.entityId,
      previous_response_id: previous,
      conversation_id: conversation,
      item_ids: references,
    });
    const found = new Map(context.references.map((item) => [item.id, item]));
    const own = entries.map((entry): PlacedItem => {
      if ('item' in entry) return entry;
      const item = found.get(entry.reference);
      if (!item) throw new ServiceError(ErrorCode.NotFound, `Item with id '${entry.reference.slice(0, 100)}' not found.`, { param: `${entry.at}.id` });
      return { item, at: entry.at };
    });
    const from = previous !== null ? 'previous_response_id' : 'conversation';
    return { earlier: context.items.map((item) => ({ item, at: from })), own };
  }

  /**
   * Keeps the answered response with every input item its model was given, and appends its own
   * input and its output to its conversation: before its client sees it end, so that the next
   * request can continue it at once.
   */
  async keep(caller: Caller, body: CreateResponseRequest, response: ResponseObject, input: ResponseInput, trace: ServedTrace): Promise<void> {
    const store = body.store !== false;
    const conversation = conversationIdOf(body.conversation);
    if (!store && conversation === null) return;
    const own: ResponseItem[] = input.own.map(({ item }) => item);
    const request: StoreResponseRequest = {
      entity_id: caller.entityId,
      stored: store ? { response, input_items: [...input.earlier.map(({ item }) => item), ...own], trace } : null,
      conversation: conversation !== null ? { id: conversation, items: [...own, ...response.output] } : null,
    };
    // The trace repeats the input; a response that only fits without it is kept without it
    // (an export names it as having no tokens) rather than not kept at all.
    if (request.stored && Buffer.byteLength(JSON.stringify(request)) > MAX_STORE_BYTES) request.stored = { ...request.stored, trace: undefined };
    await this.rpc.request(Subjects.chat.storeResponse, request);
  }
}
