import 'reflect-metadata';
import { QueueGroups } from '@trainyard/contracts';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { ChatModule } from './chat.module';
import { ChatConfig } from './config/chat.config';

runMain(async () => {
  const config = loadConfig(ChatConfig);
  await bootstrap(ChatModule.forRoot(config), { name: 'chat', config, queue: QueueGroups.chat });
});
