import { DynamicModule, Module } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway.config';
import { ChatCompletionsController } from './chat-completions.controller';
import { ChatCompletionsService } from './chat-completions.service';
import { CompletionEventsHub } from './completion-events.hub';

/** POST /v1/chat/completions: OpenAI shapes in, worker events relayed out. */
@Module({})
export class ChatModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ChatModule,
      controllers: [ChatCompletionsController],
      providers: [{ provide: GatewayConfig, useValue: config }, ChatCompletionsService, CompletionEventsHub],
    };
  }
}
