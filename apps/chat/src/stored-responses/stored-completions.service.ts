import { Injectable } from '@nestjs/common';
import {
  ChatCompletionIdRequest,
  ChatCompletionList,
  ChatCompletionMessageList,
  ChatCompletionObject,
  DeleteChatCompletionReply,
  ListChatCompletionMessagesRequest,
  ListChatCompletionsRequest,
  ServiceError,
  StoreChatCompletionRequest,
  StoredChatMessage,
  UpdateChatCompletionRequest,
} from '@trainyard/contracts';
import { Retention } from './retention';
import { StoredChatCompletionRepository, StoredChatCompletionRow } from './stored-chat-completion.repository';
import { clip } from './stored-responses.service';

/**
 * OpenAI's stored chat completions: what `store: true` keeps (the answer, the request's
 * messages, and the tokens and logprobs that were served), listed and filtered by metadata,
 * updated (metadata only) and deleted.
 */
@Injectable()
export class StoredCompletionsService {
  constructor(
    private readonly completions: StoredChatCompletionRepository,
    private readonly retention: Retention,
  ) {}

  async store(request: StoreChatCompletionRequest): Promise<Record<string, never>> {
    await this.completions.create(request.entity_id, request.completion, request.metadata, request.trace);
    return {};
  }

  async list(request: ListChatCompletionsRequest): Promise<ChatCompletionList> {
    const cutoff = this.retention.cutoff();
    let afterSeq: bigint | undefined;
    if (request.after !== undefined) {
      const after = await this.completions.find(request.entity_id, request.after, cutoff);
      if (!after) throw ServiceError.invalid(`after: no stored chat completion '${clip(request.after)}'`, 'after');
      afterSeq = after.seq;
    }
    const rows = await this.completions.page(
      request.entity_id,
      { afterSeq, take: request.limit, order: request.order, model: request.model, metadata: request.metadata },
      cutoff,
    );
    const data = withinReply(rows.slice(0, request.limit).map(toObject));
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > data.length };
  }

  async get(request: ChatCompletionIdRequest): Promise<ChatCompletionObject> {
    return toObject(await this.owned(request));
  }

  async update(request: UpdateChatCompletionRequest): Promise<ChatCompletionObject> {
    const row = await this.completions.setMetadata(request.entity_id, request.completion_id, request.metadata, this.retention.cutoff());
    if (!row) throw completionNotFound(request.completion_id);
    return toObject(row);
  }

  async delete(request: ChatCompletionIdRequest): Promise<DeleteChatCompletionReply> {
    if (!(await this.completions.delete(request.entity_id, request.completion_id, this.retention.cutoff()))) throw completionNotFound(request.completion_id);
    return { id: request.completion_id, object: 'chat.completion.deleted', deleted: true };
  }

  /** The request's messages, ids `{completion id}-{index}`, as OpenAI lists them (oldest first by default). */
  async messages(request: ListChatCompletionMessagesRequest): Promise<ChatCompletionMessageList> {
    const row = await this.owned(request);
    const trace = await this.completions.trace(row.id);
    const all: StoredChatMessage[] = (trace?.messages ?? []).map((message, i) => ({ id: `${row.id}-${i}`, ...message, content_parts: null }));
    const ordered = request.order === 'desc' ? [...all].reverse() : all;
    let start = 0;
    if (request.after !== undefined) {
      const at = ordered.findIndex((message) => message.id === request.after);
      if (at < 0) throw ServiceError.invalid(`after: no message '${clip(request.after)}' in this completion`, 'after');
      start = at + 1;
    }
    const data = withinReply(ordered.slice(start, start + request.limit));
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: start + data.length < ordered.length };
  }

  private async owned(request: ChatCompletionIdRequest): Promise<StoredChatCompletionRow> {
    const row = await this.completions.find(request.entity_id, request.completion_id, this.retention.cutoff());
    if (!row) throw completionNotFound(request.completion_id);
    return row;
  }
}

/**
 * A page's items as far as they fit in one NATS reply (at least one): a stored completion may be
 * large (its logprobs), and a shorter page with `has_more` is one the SDKs page on from.
 */
export const MAX_PAGE_BYTES = 768 * 1024;

function withinReply<T>(items: T[]): T[] {
  let bytes = 0;
  const kept: T[] = [];
  for (const item of items) {
    bytes += Buffer.byteLength(JSON.stringify(item));
    if (kept.length > 0 && bytes > MAX_PAGE_BYTES) break;
    kept.push(item);
  }
  return kept;
}

function completionNotFound(id: string): ServiceError {
  return ServiceError.notFound(`Chat completion with id '${clip(id)}' not found.`);
}

/** The completion as answered, with its metadata now, as OpenAI's retrieve shows a stored one. */
function toObject(row: StoredChatCompletionRow): ChatCompletionObject {
  return { ...row.body, metadata: row.metadata };
}
