import 'reflect-metadata';
import { QueueGroups } from '@trainyard/contracts';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { RegistryConfig } from './config/registry.config';
import { ModelRegistryModule } from './model-registry.module';

runMain(async () => {
  const config = loadConfig(RegistryConfig);
  await bootstrap(ModelRegistryModule.forRoot(config), { name: 'model-registry', config, queue: QueueGroups.registry });
});
