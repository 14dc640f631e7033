import { DynamicModule, Module } from '@nestjs/common';
import type { BackendInfo } from '@trainyard/engine';
import { ServiceRuntimeModule, WorkerPresenceModule } from '@trainyard/runtime';
import { TrainingWorkerConfig } from './config/training-worker.config';

/** Consumes training jobs with TensorFlow.js, writes checkpoints and reports events. */
@Module({})
export class TrainingWorkerModule {
  static forRoot(config: TrainingWorkerConfig, backend: BackendInfo): DynamicModule {
    return {
      module: TrainingWorkerModule,
      imports: [
        ServiceRuntimeModule.forRoot({ name: 'training-worker', config, workQueues: ['training'] }),
        WorkerPresenceModule.forRoot({
          kind: 'training',
          instance: config.INSTANCE_ID,
          backend: backend.name,
          gpu: backend.gpu,
          started_at: new Date().toISOString(),
        }),
      ],
      providers: [{ provide: TrainingWorkerConfig, useValue: config }],
    };
  }
}
