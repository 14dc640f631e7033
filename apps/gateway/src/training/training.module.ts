import { Module } from '@nestjs/common';
import { RegistryModule } from '../registry/registry.module';
import { JobEventsStream } from './job-events.stream';
import { TrainingJobsController } from './training-jobs.controller';

/** The training-job routes: RL and SFT creation, job records, events (JSON pages and SSE), cancel. */
@Module({
  imports: [RegistryModule],
  controllers: [TrainingJobsController],
  providers: [JobEventsStream],
})
export class TrainingModule {}
