import { Controller, Delete, Get, Param, Query } from '@nestjs/common';
import type { ChatCompletionList, ChatCompletionMessageList, ChatCompletionObject, DeleteChatCompletionReply, FineTuningMetadataFilter } from '@trainyard/contracts';
import { Caller, CallerParam } from '../auth/caller';
import { MetadataFilter } from '../fine-tuning/dto/metadata-filter';
import { ListChatCompletionMessagesQuery, ListChatCompletionsQuery } from './dto/stored-completion.requests';
import { StoredCompletions } from './stored-completions';

/** OpenAI's stored chat completions (`store: true`): list, retrieve, messages, delete. Update and export are POSTs beside create (ChatCompletionsController). */
@Controller('v1/chat/completions')
export class StoredCompletionsController {
  constructor(private readonly stored: StoredCompletions) {}

  /** `metadata[k]=v` pairs must all match; `metadata=null` filters nothing, as no filter. */
  @Get()
  list(@CallerParam() caller: Caller, @Query() query: ListChatCompletionsQuery, @MetadataFilter() metadata: FineTuningMetadataFilter | undefined): Promise<ChatCompletionList> {
    return this.stored.list(caller, query, metadata ?? undefined);
  }

  @Get(':completion_id')
  get(@CallerParam() caller: Caller, @Param('completion_id') completionId: string): Promise<ChatCompletionObject> {
    return this.stored.get(caller, completionId);
  }

  @Get(':completion_id/messages')
  messages(@CallerParam() caller: Caller, @Param('completion_id') completionId: string, @Query() query: ListChatCompletionMessagesQuery): Promise<ChatCompletionMessageList> {
    return this.stored.messages(caller, completionId, query);
  }

  @Delete(':completion_id')
  delete(@CallerParam() caller: Caller, @Param('completion_id') completionId: string): Promise<DeleteChatCompletionReply> {
    return this.stored.delete(caller, completionId);
  }
}
