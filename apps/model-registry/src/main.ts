import 'reflect-metadata';
import { QueueGroups } from '@trainyard/contracts';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { RegistryConfig } from './config/registry.config';
import { ModelRegistryModule } from './model-registry.module';
import { publishBaseModels } from './publish-base-models';

runMain(async () => {
  const config = loadConfig(RegistryConfig);
  const command = process.argv[2];
  if (command === 'publish-base-models') {
    await publishBaseModels(config);
    process.exit(0); // the store's and database's pools would otherwise keep a finished job alive a while
  }
  if (command !== undefined) throw new Error(`Unknown command "${command}": run with no argument (the service) or with publish-base-models`);
  await bootstrap(ModelRegistryModule.forRoot(config), { name: 'model-registry', config, queue: QueueGroups.registry });
});
