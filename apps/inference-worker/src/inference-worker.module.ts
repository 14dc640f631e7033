import { DynamicModule, Module } from '@nestjs/common';
import type { BackendInfo } from '@trainyard/engine';
import { artifactStoreProbe, ArtifactsModule } from '@trainyard/artifacts/nest';
import { ReadinessService, ServiceRuntimeModule, WorkerPresenceModule } from '@trainyard/runtime';
import { InferenceWorkerConfig } from './config/inference-worker.config';
import { AdapterCache } from './models/adapter-cache';
import { ModelCache } from './models/model-cache';
import { InferenceScheduler } from './serving/inference-scheduler';
import { PeerLoads } from './serving/peer-loads';
import { WorkQueueConsumer } from './serving/work-queue.consumer';

/** Loads base models and adapters with TensorFlow.js, batches and decodes. */
@Module({})
export class InferenceWorkerModule {
  static forRoot(config: InferenceWorkerConfig, backend: BackendInfo): DynamicModule {
    return {
      module: InferenceWorkerModule,
      imports: [
        ServiceRuntimeModule.forRoot({ name: 'inference-worker', config, workQueues: ['inference'] }),
        WorkerPresenceModule.forRoot(
          {
            kind: 'inference',
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
      providers: [{ provide: InferenceWorkerConfig, useValue: config }, artifactStoreProbe(ReadinessService), ModelCache, AdapterCache, InferenceScheduler, PeerLoads, WorkQueueConsumer],
    };
  }
}
