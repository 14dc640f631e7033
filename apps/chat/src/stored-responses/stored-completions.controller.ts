import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  ChatCompletionIdRequest,
  ChatCompletionList,
  ChatCompletionMessageList,
  ChatCompletionObject,
  DeleteChatCompletionReply,
  ExportPageReply,
  ExportPageRequest,
  ListChatCompletionMessagesRequest,
  ListChatCompletionsRequest,
  StoreChatCompletionRequest,
  Subjects,
  UpdateChatCompletionRequest,
} from '@trainyard/contracts';
import { StoredCompletionsService } from './stored-completions.service';
import { TrafficExportService } from './traffic-export.service';

/** Stored chat completions and the export of stored traffic over NATS: the gateway's only way to them. */
@Controller()
export class StoredCompletionsController {
  constructor(
    private readonly completions: StoredCompletionsService,
    private readonly exports: TrafficExportService,
  ) {}

  @MessagePattern(Subjects.chat.storeChatCompletion.name)
  store(@Payload() request: StoreChatCompletionRequest): Promise<Record<string, never>> {
    return this.completions.store(request);
  }

  @MessagePattern(Subjects.chat.listChatCompletions.name)
  list(@Payload() request: ListChatCompletionsRequest): Promise<ChatCompletionList> {
    return this.completions.list(request);
  }

  @MessagePattern(Subjects.chat.getChatCompletion.name)
  get(@Payload() request: ChatCompletionIdRequest): Promise<ChatCompletionObject> {
    return this.completions.get(request);
  }

  @MessagePattern(Subjects.chat.updateChatCompletion.name)
  update(@Payload() request: UpdateChatCompletionRequest): Promise<ChatCompletionObject> {
    return this.completions.update(request);
  }

  @MessagePattern(Subjects.chat.deleteChatCompletion.name)
  delete(@Payload() request: ChatCompletionIdRequest): Promise<DeleteChatCompletionReply> {
    return this.completions.delete(request);
  }

  @MessagePattern(Subjects.chat.listChatCompletionMessages.name)
  messages(@Payload() request: ListChatCompletionMessagesRequest): Promise<ChatCompletionMessageList> {
    return this.completions.messages(request);
  }

  @MessagePattern(Subjects.chat.exportPage.name)
  exportPage(@Payload() request: ExportPageRequest): Promise<ExportPageReply> {
    return this.exports.page(request);
  }
}
