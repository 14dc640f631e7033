import { Injectable } from '@nestjs/common';
import {
  ChatCompletionList,
  ChatCompletionMessageList,
  ChatCompletionObject,
  DeleteChatCompletionReply,
  ServedTrace,
  Subjects,
} from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import type { Caller } from '../auth/caller';
import type { ListChatCompletionMessagesQuery, ListChatCompletionsQuery } from './dto/stored-completion.requests';

/** Stored chat completions, which the chat service keeps: the gateway's side of them, always in the caller's entity. */
@Injectable()
export class StoredCompletions {
  constructor(private readonly rpc: RpcClient) {}

  async store(caller: Caller, completion: ChatCompletionObject, metadata: Record<string, string>, trace: ServedTrace): Promise<void> {
    await this.rpc.request(Subjects.chat.storeChatCompletion, { entity_id: caller.entityId, completion, metadata, trace });
  }

  list(caller: Caller, query: ListChatCompletionsQuery, metadata: Record<string, string> | undefined): Promise<ChatCompletionList> {
    return this.rpc.request(Subjects.chat.listChatCompletions, {
      entity_id: caller.entityId,
      after: query.after,
      limit: query.limit,
      order: query.order,
      ...(query.model !== undefined ? { model: query.model } : {}),
      ...(metadata !== undefined ? { metadata } : {}),
    });
  }

  get(caller: Caller, completionId: string): Promise<ChatCompletionObject> {
    return this.rpc.request(Subjects.chat.getChatCompletion, { entity_id: caller.entityId, completion_id: completionId });
  }

  update(caller: Caller, completionId: string, metadata: Record<string, string>): Promise<ChatCompletionObject> {
    return this.rpc.request(Subjects.chat.updateChatCompletion, { entity_id: caller.entityId, completion_id: completionId, metadata });
  }

  delete(caller: Caller, completionId: string): Promise<DeleteChatCompletionReply> {
    return this.rpc.request(Subjects.chat.deleteChatCompletion, { entity_id: caller.entityId, completion_id: completionId });
  }

  messages(caller: Caller, completionId: string, query: ListChatCompletionMessagesQuery): Promise<ChatCompletionMessageList> {
    return this.rpc.request(Subjects.chat.listChatCompletionMessages, {
      entity_id: caller.entityId,
      completion_id: completionId,
      after: query.after,
      limit: query.limit,
      order: query.order,
    });
  }
}
