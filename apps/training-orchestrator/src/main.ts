import 'reflect-metadata';
import { QueueGroups } from '@trainyard/contracts';
import { bootstrap, loadConfig, runMain } from '@trainyard/runtime';
import { OrchestratorConfig } from './config/orchestrator.config';
import { TrainingOrchestratorModule } from './training-orchestrator.module';

runMain(async () => {
  const config = loadConfig(OrchestratorConfig);
  await bootstrap(TrainingOrchestratorModule.forRoot(config), {
    name: 'training-orchestrator',
    config,
    queue: QueueGroups.training,
  });
});
