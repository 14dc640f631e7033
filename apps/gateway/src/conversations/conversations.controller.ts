import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ConversationRecord,
  DeleteConversationReply,
  ItemList,
  ResponseItem,
  ServiceError,
  Subjects,
} from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { Caller, CallerParam } from '../auth/caller';
import { JsonBody } from '../http/json-body.guard';
import { ListItemsQuery } from '../responses/dto/list-items.query';
import { toInputEntries } from '../responses/response-items';
import { AddConversationItemsRequest, CreateConversationRequest, UpdateConversationRequest } from './dto/conversation.requests';

/** OpenAI's Conversations API; the conversations themselves are the chat service's. */
@Controller('v1/conversations')
export class ConversationsController {
  constructor(private readonly rpc: RpcClient) {}

  @Post()
  @HttpCode(200)
  @JsonBody()
  create(@CallerParam() caller: Caller, @Body() body: CreateConversationRequest): Promise<ConversationRecord> {
    return this.rpc.request(Subjects.chat.createConversation, { entity_id: caller.entityId, items: storedItems(body.items ?? []), metadata: body.metadata ?? {} });
  }

  @Get(':conversation_id')
  get(@CallerParam() caller: Caller, @Param('conversation_id') conversationId: string): Promise<ConversationRecord> {
    return this.rpc.request(Subjects.chat.getConversation, { entity_id: caller.entityId, conversation_id: conversationId });
  }

  @Post(':conversation_id')
  @HttpCode(200)
  @JsonBody()
  update(@CallerParam() caller: Caller, @Param('conversation_id') conversationId: string, @Body() body: UpdateConversationRequest): Promise<ConversationRecord> {
    return this.rpc.request(Subjects.chat.updateConversation, { entity_id: caller.entityId, conversation_id: conversationId, metadata: body.metadata });
  }

  @Delete(':conversation_id')
  delete(@CallerParam() caller: Caller, @Param('conversation_id') conversationId: string): Promise<DeleteConversationReply> {
    return this.rpc.request(Subjects.chat.deleteConversation, { entity_id: caller.entityId, conversation_id: conversationId });
  }

  @Get(':conversation_id/items')
  listItems(@CallerParam() caller: Caller, @Param('conversation_id') conversationId: string, @Query() query: ListItemsQuery): Promise<ItemList> {
    return this.rpc.request(Subjects.chat.listConversationItems, {
      entity_id: caller.entityId,
      conversation_id: conversationId,
      after: query.after,
      limit: query.limit,
      order: query.order,
    });
  }

  @Post(':conversation_id/items')
  @HttpCode(200)
  @JsonBody()
  addItems(@CallerParam() caller: Caller, @Param('conversation_id') conversationId: string, @Body() body: AddConversationItemsRequest): Promise<ItemList> {
    return this.rpc.request(Subjects.chat.addConversationItems, { entity_id: caller.entityId, conversation_id: conversationId, items: storedItems(body.items) });
  }

  @Get(':conversation_id/items/:item_id')
  getItem(@CallerParam() caller: Caller, @Param('conversation_id') conversationId: string, @Param('item_id') itemId: string): Promise<ResponseItem> {
    return this.rpc.request(Subjects.chat.getConversationItem, { entity_id: caller.entityId, conversation_id: conversationId, item_id: itemId });
  }

  @Delete(':conversation_id/items/:item_id')
  deleteItem(@CallerParam() caller: Caller, @Param('conversation_id') conversationId: string, @Param('item_id') itemId: string): Promise<ConversationRecord> {
    return this.rpc.request(Subjects.chat.deleteConversationItem, { entity_id: caller.entityId, conversation_id: conversationId, item_id: itemId });
  }
}

/** Items as a conversation keeps them; a reference to a stored item is not one (send the item itself). */
function storedItems(items: Record<string, unknown>[]): ResponseItem[] {
  return toInputEntries(items, 'items').map((entry) => {
    if ('item' in entry) return entry.item;
    throw ServiceError.invalid('item_reference items cannot be added to a conversation; send the item itself', `${entry.at}.type`);
  });
}
