import { DynamicModule, Module } from '@nestjs/common';
import type { BackendInfo } from '@trainyard/engine';
import { BlobStore } from '@trainyard/messaging';
import { ServiceRuntimeModule, WorkerPresenceModule } from '@trainyard/runtime';
import { TrainingWorkerConfig } from './config/training-worker.config';
import { JobRunner } from './training/job-runner';
import { TrainingQueueConsumer } from './training/training-queue.consumer';
import { TinkerExecutor } from './tinker/tinker-executor';
import { TinkerQueueConsumer } from './tinker/tinker-queue.consumer';

/** Consumes training jobs and Tinker calls with TensorFlow.js, writes checkpoints and reports events. */
@Module({})
export class TrainingWorkerModule {
  static forRoot(config: TrainingWorkerConfig, backend: BackendInfo): DynamicModule {
    return {
      module: TrainingWorkerModule,
      imports: [
        ServiceRuntimeModule.forRoot({ name: 'training-worker', config, workQueues: ['training', 'tinker'] }),
        WorkerPresenceModule.forRoot(
          {
            kind: 'training',
            instance: config.INSTANCE_ID,
            backend: backend.name,
            gpu: backend.gpu,
            adapter: backend.adapter,
            started_at: new Date().toISOString(),
          },
          { requireGpu: config.REQUIRE_GPU },
        ),
      ],
      providers: [{ provide: TrainingWorkerConfig, useValue: config }, BlobStore, JobRunner, TrainingQueueConsumer, TinkerExecutor, TinkerQueueConsumer],
    };
  }
}
