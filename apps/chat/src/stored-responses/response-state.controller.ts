import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  AddConversationItemsRequest,
  ConversationIdRequest,
  ConversationItemRequest,
  ConversationRecord,
  CreateConversationRequest,
  DeleteConversationReply,
  DeleteResponseReply,
  ItemList,
  ListConversationItemsRequest,
  ListInputItemsRequest,
  ResponseContextReply,
  ResponseContextRequest,
  ResponseIdRequest,
  ResponseItem,
  ResponseObject,
  StoreResponseRequest,
  Subjects,
  UpdateConversationRequest,
} from '@trainyard/contracts';
import { ConversationsService } from './conversations.service';
import { StoredResponsesService } from './stored-responses.service';

/** The Responses API's state over NATS: the gateway's only way to it. */
@Controller()
export class ResponseStateController {
  constructor(
    private readonly responses: StoredResponsesService,
    private readonly conversations: ConversationsService,
  ) {}

  @MessagePattern(Subjects.chat.responseContext.name)
  context(@Payload() request: ResponseContextRequest): Promise<ResponseContextReply> {
    return this.responses.context(request);
  }

  @MessagePattern(Subjects.chat.storeResponse.name)
  store(@Payload() request: StoreResponseRequest): Promise<Record<string, never>> {
    return this.responses.store(request);
  }

  @MessagePattern(Subjects.chat.getResponse.name)
  getResponse(@Payload() request: ResponseIdRequest): Promise<ResponseObject> {
    return this.responses.get(request);
  }

  @MessagePattern(Subjects.chat.deleteResponse.name)
  deleteResponse(@Payload() request: ResponseIdRequest): Promise<DeleteResponseReply> {
    return this.responses.delete(request);
  }

  @MessagePattern(Subjects.chat.listInputItems.name)
  inputItems(@Payload() request: ListInputItemsRequest): Promise<ItemList> {
    return this.responses.inputItems(request);
  }

  @MessagePattern(Subjects.chat.createConversation.name)
  createConversation(@Payload() request: CreateConversationRequest): Promise<ConversationRecord> {
    return this.conversations.create(request);
  }

  @MessagePattern(Subjects.chat.getConversation.name)
  getConversation(@Payload() request: ConversationIdRequest): Promise<ConversationRecord> {
    return this.conversations.get(request);
  }

  @MessagePattern(Subjects.chat.updateConversation.name)
  updateConversation(@Payload() request: UpdateConversationRequest): Promise<ConversationRecord> {
    return this.conversations.update(request);
  }

  @MessagePattern(Subjects.chat.deleteConversation.name)
  deleteConversation(@Payload() request: ConversationIdRequest): Promise<DeleteConversationReply> {
    return this.conversations.delete(request);
  }

  @MessagePattern(Subjects.chat.listConversationItems.name)
  listItems(@Payload() request: ListConversationItemsRequest): Promise<ItemList> {
    return this.conversations.listItems(request);
  }

  @MessagePattern(Subjects.chat.addConversationItems.name)
  addItems(@Payload() request: AddConversationItemsRequest): Promise<ItemList> {
    return this.conversations.addItems(request);
  }

  @MessagePattern(Subjects.chat.getConversationItem.name)
  getItem(@Payload() request: ConversationItemRequest): Promise<ResponseItem> {
    return this.conversations.getItem(request);
  }

  @MessagePattern(Subjects.chat.deleteConversationItem.name)
  deleteItem(@Payload() request: ConversationItemRequest): Promise<ConversationRecord> {
    return this.conversations.deleteItem(request);
  }
}
