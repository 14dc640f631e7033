import { ArtifactsModule } from '@trainyard/artifacts/nest';
import { DynamicModule, Module } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { DbModule } from '@trainyard/db';
import { BlobStore } from '@trainyard/messaging';
import { ServiceRuntimeModule } from '@trainyard/runtime';
import { OrchestratorConfig } from './config/orchestrator.config';
import { AllowList, OutboundFetch } from './data/outbound-fetch';
import { TrainingDataSource } from './data/training-data.source';
import { WandbArtifacts } from './data/wandb-artifacts';
import { FineTuningJobsService } from './fine-tuning/fine-tuning-jobs.service';
import { JobQueue } from './jobs/job-queue';
import { TrainingJobRepository } from './jobs/training-job.repository';
import { TrainingJobsController } from './jobs/training-jobs.controller';
import { TrainingJobsService } from './jobs/training-jobs.service';
import { AbandonedJobsWatcher } from './work/abandoned-jobs.watcher';
import { JobLifecycleService } from './work/job-lifecycle.service';
import { StrandedJobsWatcher } from './work/stranded-jobs.watcher';
import { TinkerCallsService } from './tinker/tinker-calls.service';
import { TinkerController } from './tinker/tinker.controller';
import { TinkerRepository } from './tinker/tinker.repository';
import { TinkerRunsService } from './tinker/tinker-runs.service';
import { TinkerSamplingService } from './tinker/tinker-sampling.service';
import { TinkerService } from './tinker/tinker.service';
import { TinkerStatesService } from './tinker/tinker-states.service';

/** Training jobs, their states and events; feeds the training queue. Tinker sessions, training clients and futures; feeds the Tinker queue. */
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
          workQueues: ['training', 'tinker'],
        }),
        DbModule.forRoot(config.DATABASE_URL),
        ArtifactsModule.forRoot(config),
      ],
      controllers: [TrainingJobsController, TinkerController],
      providers: [
        { provide: OrchestratorConfig, useValue: config },
        BlobStore,
        TrainingJobRepository,
        JobQueue,
        {
          provide: OutboundFetch,
          useValue: new OutboundFetch({ allowList: new AllowList(config.SFT_DATA_ALLOWED_HOSTS), timeoutMs: config.SFT_DATA_FETCH_TIMEOUT_MS }),
        },
        WandbArtifacts,
        TrainingDataSource,
        TrainingJobsService,
        FineTuningJobsService,
        JobLifecycleService,
        AbandonedJobsWatcher,
        StrandedJobsWatcher,
        TinkerRepository,
        TinkerService,
        TinkerSamplingService,
        TinkerRunsService,
        TinkerStatesService,
        TinkerCallsService,
      ],
    };
  }
}
