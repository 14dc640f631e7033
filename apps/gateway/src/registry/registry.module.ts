import { Module } from '@nestjs/common';
import { BlobStore } from '@trainyard/messaging';
import { BaseModelsController } from './base-models.controller';
import { CheckpointsController } from './checkpoints.controller';
import { MetricsLogController } from './metrics-log.controller';
import { ModelsController } from './models.controller';
import { OpenAiModelsController } from './openai-models.controller';
import { TrajectoriesController } from './trajectories.controller';

/** The registry's HTTP routes: models, checkpoints, metrics logs, kept trajectories, base models and the OpenAI model list. */
@Module({
  controllers: [BaseModelsController, OpenAiModelsController, ModelsController, CheckpointsController, MetricsLogController, TrajectoriesController],
  providers: [BlobStore],
  exports: [BlobStore],
})
export class RegistryModule {}
