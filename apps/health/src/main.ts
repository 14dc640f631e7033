import 'reflect-metadata';
import { QueueGroups } from '@trainyard/contracts';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { HealthConfig } from './config/health.config';
import { HealthModule } from './health.module';

runMain(async () => {
  const config = loadConfig(HealthConfig);
  await bootstrap(HealthModule.forRoot(config), { name: 'health', config, queue: QueueGroups.health });
});
