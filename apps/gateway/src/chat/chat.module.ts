import { DynamicModule, Module } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway.config';
import { ChatCompletionsController } from './chat-completions.controller';
import { ChatCompletionsService } from './chat-completions.service';
import { CompletionEventsHub } from './completion-events.hub';
import { CompletionRunner } from './completion-runner';
import { StoredCompletions } from './stored-completions';
import { StoredCompletionsController } from './stored-completions.controller';
import { TrafficExportService } from './traffic-export.service';
import { ConversationsController } from '../conversations/conversations.controller';
import { ResponseState } from '../responses/response-state';
import { ResponsesController } from '../responses/responses.controller';
import { ResponsesService } from '../responses/responses.service';

/**
 * POST /v1/chat/completions with its stored completions, and the Responses API (responses,
 * conversations): OpenAI shapes in, worker events relayed out; stored traffic exported as
 * training data.
 */
@Module({})
export class ChatModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ChatModule,
      controllers: [ChatCompletionsController, StoredCompletionsController, ResponsesController, ConversationsController],
      providers: [
        { provide: GatewayConfig, useValue: config },
        ChatCompletionsService,
        CompletionEventsHub,
        CompletionRunner,
        StoredCompletions,
        TrafficExportService,
        ResponsesService,
        ResponseState,
      ],
    };
  }
}
