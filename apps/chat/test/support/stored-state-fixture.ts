import { Test, TestingModule } from '@nestjs/testing';
import { DbModule, PrismaService } from '@trainyard/db';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase } from '@trainyard/testing';
import { ChatConfig } from '../../src/config/chat.config';
import { ConversationRepository } from '../../src/stored-responses/conversation.repository';
import { ConversationsService } from '../../src/stored-responses/conversations.service';
import { ExpiredStateSweeper } from '../../src/stored-responses/expired-state.sweeper';
import { Retention } from '../../src/stored-responses/retention';
import { StoredChatCompletionRepository } from '../../src/stored-responses/stored-chat-completion.repository';
import { StoredCompletionsService } from '../../src/stored-responses/stored-completions.service';
import { StoredResponseRepository } from '../../src/stored-responses/stored-response.repository';
import { StoredResponsesService } from '../../src/stored-responses/stored-responses.service';
import { StoredTrafficRepository } from '../../src/stored-responses/stored-traffic.repository';
import { TrafficExportService } from '../../src/stored-responses/traffic-export.service';

/** What chat keeps in PostgreSQL (stored responses, conversations, stored completions, their export) on a fresh database, with two entities. */
export interface StoredStateFixture {
  moduleRef: TestingModule;
  prisma: PrismaService;
  acme: string;
  globex: string;
  close(): Promise<void>;
}

/** A fresh test database and chat's stored-state services on it, retention 30 days. */
export async function startStoredStateFixture(): Promise<StoredStateFixture> {
  const db = await createTestDatabase();
  const config = Object.assign(new ChatConfig(), { RESPONSE_RETENTION_DAYS: 30 });
  const moduleRef = await Test.createTestingModule({
    imports: [ProcessHealthModule, DbModule.forRoot(db.url)],
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
  }).compile();
  const prisma = moduleRef.get(PrismaService);
  const acme = (await prisma.entity.create({ data: { name: 'acme' } })).id;
  const globex = (await prisma.entity.create({ data: { name: 'globex' } })).id;
  return {
    moduleRef,
    prisma,
    acme,
    globex,
    close: async () => {
      await moduleRef.close();
      await db.drop();
    },
  };
}
