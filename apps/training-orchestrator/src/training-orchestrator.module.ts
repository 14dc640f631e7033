import { DynamicModule, Module } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { DbModule } from '@trainyard/db';
import { ServiceRuntimeModule } from '@trainyard/runtime';
import { OrchestratorConfig } from './config/orchestrator.config';

/** Training jobs, their states and events; feeds the training queue. */
@Module({})
export class TrainingOrchestratorModule {
  static forRoot(config: OrchestratorConfig): DynamicModule {
    return {
      module: TrainingOrchestratorModule,
      imports: [
        ServiceRuntimeModule.forRoot({
          name: 'training-orchestrator',
          config,
          healthSubject: Subjects.training.healthCheck,
          workQueues: ['training'],
        }),
        DbModule.forRoot(config.DATABASE_URL),
      ],
      providers: [{ provide: OrchestratorConfig, useValue: config }],
    };
  }
}
