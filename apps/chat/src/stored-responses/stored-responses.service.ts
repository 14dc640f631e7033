import { Injectable } from '@nestjs/common';
import {
  DeleteResponseReply,
  ErrorCode,
  ItemList,
  ListInputItemsRequest,
  ResponseContextReply,
  ResponseContextRequest,
  ResponseIdRequest,
  ResponseItem,
  ResponseObject,
  ServiceError,
  StoreResponseRequest,
} from '@trainyard/contracts';
import { ConversationRepository } from './conversation.repository';
import { itemList } from './item-page';
import { Retention } from './retention';
import { StoredResponseRepository } from './stored-response.repository';

/**
 * The earlier turns a response continues must travel back to the gateway in one NATS message
 * (1 MiB); a context larger than this is refused by name rather than failing as a torn reply.
 */
export const MAX_CONTEXT_BYTES = 768 * 1024;

/**
 * Stored responses: what `store` keeps, what `previous_response_id` continues and what an
 * `item_reference` names. A response's input items are everything its model was given (the
 * turns before it included), so continuing one reads one response, never a chain, and deleting
 * a response leaves the ones that continued it whole.
 */
@Injectable()
export class StoredResponsesService {
  constructor(
    private readonly responses: StoredResponseRepository,
    private readonly conversations: ConversationRepository,
    private readonly retention: Retention,
  ) {}

  async context(request: ResponseContextRequest): Promise<ResponseContextReply> {
    const cutoff = this.retention.cutoff();
    let items: ResponseItem[] = [];
    if (request.previous_response_id !== null) {
      const previous = await this.responses.find(request.entity_id, request.previous_response_id, cutoff);
      if (!previous) throw notFound(`Previous response with id '${clip(request.previous_response_id)}' not found.`, 'previous_response_id');
      items = [...(await this.responses.items(previous.id, 'input')), ...(await this.responses.items(previous.id, 'output'))];
    } else if (request.conversation_id !== null) {
      const conversation = await this.conversations.find(request.entity_id, request.conversation_id, cutoff);
      if (!conversation) throw notFound(`Conversation with id '${clip(request.conversation_id)}' not found.`, 'conversation');
      items = await this.conversations.items(conversation.id);
    }
    const references = request.item_ids.length > 0 ? await this.references(request.entity_id, request.item_ids, cutoff) : [];
    const bytes = Buffer.byteLength(JSON.stringify(items)) + Buffer.byteLength(JSON.stringify(references));
    if (bytes > MAX_CONTEXT_BYTES) {
      throw new ServiceError(ErrorCode.PayloadTooLarge, `The earlier turns are ${bytes} bytes, more than the ${MAX_CONTEXT_BYTES} a response can continue; start a new one with the turns that matter as input`, {
        param: request.previous_response_id !== null ? 'previous_response_id' : request.conversation_id !== null ? 'conversation' : 'input',
      });
    }
    return { items, references };
  }

  async store(request: StoreResponseRequest): Promise<Record<string, never>> {
    const { stored, conversation } = request;
    const recorded = await this.responses.record(
      {
        entityId: request.entity_id,
        stored: stored && {
          id: stored.response.id,
          body: withoutOutput(stored.response),
          input: stored.input_items,
          output: stored.response.output,
          model: typeof stored.response['model'] === 'string' ? stored.response['model'] : null,
          metadata: metadataOf(stored.response),
          trace: stored.trace ?? null,
        },
        conversation,
      },
      this.retention.cutoff(),
    );
    // Deleted while the response ran: nothing was kept.
    if (!recorded && conversation) throw notFound(`Conversation with id '${clip(conversation.id)}' not found.`, 'conversation');
    return {};
  }

  async get(request: ResponseIdRequest): Promise<ResponseObject> {
    const row = await this.responses.find(request.entity_id, request.response_id, this.retention.cutoff());
    if (!row) throw responseNotFound(request.response_id);
    return { ...row.body, output: await this.responses.items(row.id, 'output') } as ResponseObject;
  }

  async delete(request: ResponseIdRequest): Promise<DeleteResponseReply> {
    if (!(await this.responses.delete(request.entity_id, request.response_id, this.retention.cutoff()))) throw responseNotFound(request.response_id);
    return { id: request.response_id, object: 'response.deleted', deleted: true };
  }

  async inputItems(request: ListInputItemsRequest): Promise<ItemList> {
    const row = await this.responses.find(request.entity_id, request.response_id, this.retention.cutoff());
    if (!row) throw responseNotFound(request.response_id);
    return itemList(await this.responses.page(row.id, 'input', request), request.limit);
  }

  /** Found in the entity's stored responses first, then in its conversations. */
  private async references(entityId: string, itemIds: string[], cutoff: Date): Promise<ResponseItem[]> {
    const wanted = [...new Set(itemIds)];
    const found = await this.responses.findItems(entityId, wanted, cutoff);
    const missing = wanted.filter((id) => !found.some((item) => item.id === id));
    return missing.length > 0 ? [...found, ...(await this.conversations.findItems(entityId, missing, cutoff))] : found;
  }
}

function withoutOutput(response: ResponseObject): Record<string, unknown> {
  const { output: _output, ...body } = response;
  return body;
}

/** The response's `metadata` pairs (string values only: what an export filters on). */
function metadataOf(response: ResponseObject): Record<string, string> {
  const metadata = response['metadata'];
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return {};
  return Object.fromEntries(Object.entries(metadata).filter((pair): pair is [string, string] => typeof pair[1] === 'string'));
}

export function responseNotFound(id: string): ServiceError {
  return ServiceError.notFound(`Response with id '${clip(id)}' not found.`);
}

/** Not found, naming the request field that named it. */
export function notFound(message: string, param: string): ServiceError {
  return new ServiceError(ErrorCode.NotFound, message, { param });
}

/** An id as an error message quotes it: a path may carry kilobytes. */
export function clip(id: string): string {
  return id.length > 100 ? `${id.slice(0, 100)}...` : id;
}
