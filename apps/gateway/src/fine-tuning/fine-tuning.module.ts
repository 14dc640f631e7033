import { Module } from '@nestjs/common';
import { FineTuningJobsController } from './fine-tuning-jobs.controller';
import { FineTuningJobsService } from './fine-tuning-jobs.service';

/** OpenAI's /v1/fine_tuning/jobs: create, list, retrieve, cancel, events and checkpoints of SFT jobs. */
@Module({
  controllers: [FineTuningJobsController],
  providers: [FineTuningJobsService],
})
export class FineTuningModule {}
