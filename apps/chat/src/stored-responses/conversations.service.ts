import { Injectable } from '@nestjs/common';
import {
  AddConversationItemsRequest,
  ConversationIdRequest,
  ConversationItemRequest,
  ConversationRecord,
  CreateConversationRequest,
  DeleteConversationReply,
  ItemList,
  ListConversationItemsRequest,
  ResponseItem,
  ServiceError,
  UpdateConversationRequest,
} from '@trainyard/contracts';
import { ConversationRepository, ConversationRow } from './conversation.repository';
import { itemList } from './item-page';
import { Retention } from './retention';
import { newStateId } from './state-ids';
import { clip } from './stored-responses.service';

/** The Conversations API: items that responses made `conversation` read and append to. */
@Injectable()
export class ConversationsService {
  constructor(
    private readonly conversations: ConversationRepository,
    private readonly retention: Retention,
  ) {}

  async create(request: CreateConversationRequest): Promise<ConversationRecord> {
    return toRecord(await this.conversations.create(request.entity_id, newStateId('conv'), request.metadata, request.items));
  }

  async get(request: ConversationIdRequest): Promise<ConversationRecord> {
    return toRecord(await this.owned(request));
  }

  async update(request: UpdateConversationRequest): Promise<ConversationRecord> {
    const row = await this.conversations.setMetadata(request.entity_id, request.conversation_id, request.metadata, this.retention.cutoff());
    if (!row) throw conversationNotFound(request.conversation_id);
    return toRecord(row);
  }

  /** Deletes its items too: nothing of it is left to read. */
  async delete(request: ConversationIdRequest): Promise<DeleteConversationReply> {
    if (!(await this.conversations.delete(request.entity_id, request.conversation_id, this.retention.cutoff()))) throw conversationNotFound(request.conversation_id);
    return { id: request.conversation_id, object: 'conversation.deleted', deleted: true };
  }

  async listItems(request: ListConversationItemsRequest): Promise<ItemList> {
    const row = await this.owned(request);
    return itemList(await this.conversations.page(row.id, request), request.limit);
  }

  /** Answers with the items added, as OpenAI does. */
  async addItems(request: AddConversationItemsRequest): Promise<ItemList> {
    if (!(await this.conversations.append(request.entity_id, request.conversation_id, request.items, this.retention.cutoff()))) {
      throw conversationNotFound(request.conversation_id);
    }
    return itemList(request.items.map((item, i) => ({ seq: BigInt(i), itemId: item.id, item })), request.items.length);
  }

  async getItem(request: ConversationItemRequest): Promise<ResponseItem> {
    const row = await this.owned(request);
    const item = await this.conversations.item(row.id, request.item_id);
    if (!item) throw itemNotFound(request.item_id);
    return item;
  }

  /** Answers with the conversation, as OpenAI does. */
  async deleteItem(request: ConversationItemRequest): Promise<ConversationRecord> {
    const row = await this.owned(request);
    if (!(await this.conversations.deleteItem(row.id, request.item_id))) throw itemNotFound(request.item_id);
    return toRecord(row);
  }

  private async owned(request: ConversationIdRequest): Promise<ConversationRow> {
    const row = await this.conversations.find(request.entity_id, request.conversation_id, this.retention.cutoff());
    if (!row) throw conversationNotFound(request.conversation_id);
    return row;
  }
}

function conversationNotFound(id: string): ServiceError {
  return ServiceError.notFound(`Conversation with id '${clip(id)}' not found.`);
}

function itemNotFound(id: string): ServiceError {
  return ServiceError.notFound(`Item with id '${clip(id)}' not found.`);
}

function toRecord(row: ConversationRow): ConversationRecord {
  return { id: row.id, object: 'conversation', created_at: Math.floor(row.createdAt.getTime() / 1000), metadata: row.metadata };
}
