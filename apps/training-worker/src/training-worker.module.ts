import { DynamicModule, Module } from '@nestjs/common';
import type { BackendInfo } from '@trainyard/engine';
import { artifactStoreProbe, ArtifactsModule } from '@trainyard/artifacts/nest';
import { BlobStore } from '@trainyard/messaging';
import { ReadinessService, ServiceRuntimeModule, WorkerPresenceModule } from '@trainyard/runtime';
import { TrainingWorkerConfig } from './config/training-worker.config';
import { AdapterArtifacts } from './training/adapter-artifacts';
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
        ArtifactsModule.forRoot(config),
      ],
      providers: [
        { provide: TrainingWorkerConfig, useValue: config },
        artifactStoreProbe(ReadinessService),
        BlobStore,
        AdapterArtifacts,
        JobRunner,
        TrainingQueueConsumer,
        TinkerExecutor,
        TinkerQueueConsumer,
      ],
    };
  }
}
