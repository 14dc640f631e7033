import { DynamicModule, Module } from '@nestjs/common';
import { DbModule } from '@trainyard/db';
import { ChatConfig } from '../config/chat.config';
import { ConversationRepository } from './conversation.repository';
import { ConversationsService } from './conversations.service';
import { ExpiredStateSweeper } from './expired-state.sweeper';
import { ResponseStateController } from './response-state.controller';
import { Retention } from './retention';
import { StoredResponseRepository } from './stored-response.repository';
import { StoredChatCompletionRepository } from './stored-chat-completion.repository';
import { StoredCompletionsController } from './stored-completions.controller';
import { StoredCompletionsService } from './stored-completions.service';
import { StoredResponsesService } from './stored-responses.service';
import { StoredTrafficRepository } from './stored-traffic.repository';
import { TrafficExportService } from './traffic-export.service';

/**
 * The Responses API's state (stored responses and conversations) and stored chat completions,
 * with the export of both as training data. Chat owns it because it is
 * the conversation side of serving: what was asked and answered, read back as the earlier
 * turns of the next request; the registry owns models and training data, the gateway only
 * its own auth tables (it stays the HTTP edge and asks here over NATS).
 */
@Module({})
export class ResponseStateModule {
  static forRoot(config: ChatConfig): DynamicModule {
    return {
      module: ResponseStateModule,
      imports: [DbModule.forRoot(config.DATABASE_URL)],
      controllers: [ResponseStateController, StoredCompletionsController],
      providers: [
        { provide: ChatConfig, useValue: config },
        Retention,
        StoredResponseRepository,
        ConversationRepository,
        StoredResponsesService,
        ConversationsService,
        StoredChatCompletionRepository,
        StoredCompletionsService,
        StoredTrafficRepository,
        TrafficExportService,
        ExpiredStateSweeper,
      ],
    };
  }
}
