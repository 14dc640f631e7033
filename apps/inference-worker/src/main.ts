import 'reflect-metadata';
import { selectBackend } from '@trainyard/engine';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { InferenceWorkerConfig } from './config/inference-worker.config';
import { InferenceWorkerModule } from './inference-worker.module';

runMain(async () => {
  const config = loadConfig(InferenceWorkerConfig);
  const backend = await selectBackend(config.COMPUTE_BACKEND);
  await bootstrap(InferenceWorkerModule.forRoot(config, backend), { name: 'inference-worker', config });
});
