import { DynamicModule, Module } from '@nestjs/common';
import { DbModule } from '@trainyard/db';
import { ChatConfig } from '../config/chat.config';
import { ConversationRepository } from './conversation.repository';
import { ConversationsService } from './conversations.service';
import { ExpiredStateSweeper } from './expired-state.sweeper';
import { ResponseStateController } from './response-state.controller';
import { Retention } from './retention';
import { StoredResponseRepository } from './stored-response.repository';
import { StoredResponsesService } from './stored-responses.service';

/**
 * The Responses API's state: stored responses and conversations. Chat owns it because it is
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
      controllers: [ResponseStateController],
      providers: [
        { provide: ChatConfig, useValue: config },
        Retention,
        StoredResponseRepository,
        ConversationRepository,
        StoredResponsesService,
        ConversationsService,
        ExpiredStateSweeper,
      ],
    };
  }
}
