import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  ClaimJobReply,
  ClaimJobRequest,
  CompleteJobRequest,
  CreateFineTuningJobRequest,
  CreateJobReply,
  CreateRlJobRequest,
  CreateSftJobRequest,
  EndedJobsReply,
  EndedJobsRequest,
  JobCheckpointRecord,
  JobProgress,
  JobProgressReply,
  JobRequest,
  ListJobCheckpointsRequest,
  ListJobEventsRequest,
  ListTrainingJobsRequest,
  Page,
  Subjects,
  TrainingEventRecord,
  TrainingJobRecord,
} from '@trainyard/contracts';
import { FineTuningJobsService } from '../fine-tuning/fine-tuning-jobs.service';
import { JobLifecycleService } from '../work/job-lifecycle.service';
import { TrainingJobsService } from './training-jobs.service';

@Controller()
export class TrainingJobsController {
  constructor(
    private readonly jobs: TrainingJobsService,
    private readonly lifecycle: JobLifecycleService,
    private readonly fineTuning: FineTuningJobsService,
  ) {}

  @MessagePattern(Subjects.training.createRlJob.name)
  createRl(@Payload() request: CreateRlJobRequest): Promise<CreateJobReply> {
    return this.jobs.createRl(request);
  }

  @MessagePattern(Subjects.training.endedJobs.name)
  ended(@Payload() request: EndedJobsRequest): Promise<EndedJobsReply> {
    return this.jobs.ended(request);
  }

  @MessagePattern(Subjects.training.createSftJob.name)
  createSft(@Payload() request: CreateSftJobRequest): Promise<CreateJobReply> {
    return this.jobs.createSft(request);
  }

  @MessagePattern(Subjects.training.createFineTuningJob.name)
  createFineTuning(@Payload() request: CreateFineTuningJobRequest): Promise<TrainingJobRecord> {
    return this.fineTuning.create(request);
  }

  @MessagePattern(Subjects.training.getJob.name)
  get(@Payload() request: JobRequest): Promise<TrainingJobRecord> {
    return this.jobs.get(request);
  }

  @MessagePattern(Subjects.training.listJobs.name)
  list(@Payload() request: ListTrainingJobsRequest): Promise<Page<TrainingJobRecord>> {
    return this.jobs.list(request);
  }

  @MessagePattern(Subjects.training.listEvents.name)
  events(@Payload() request: ListJobEventsRequest): Promise<Page<TrainingEventRecord>> {
    return this.jobs.listEvents(request);
  }

  @MessagePattern(Subjects.training.listJobCheckpoints.name)
  checkpoints(@Payload() request: ListJobCheckpointsRequest): Promise<Page<JobCheckpointRecord>> {
    return this.jobs.listCheckpoints(request);
  }

  @MessagePattern(Subjects.training.cancelJob.name)
  cancel(@Payload() request: JobRequest): Promise<TrainingJobRecord> {
    return this.jobs.cancel(request);
  }

  @MessagePattern(Subjects.training.claimJob.name)
  claim(@Payload() request: ClaimJobRequest): Promise<ClaimJobReply> {
    return this.lifecycle.claim(request);
  }

  @MessagePattern(Subjects.training.reportProgress.name)
  progress(@Payload() report: JobProgress): Promise<JobProgressReply> {
    return this.lifecycle.progress(report);
  }

  @MessagePattern(Subjects.training.completeJob.name)
  complete(@Payload() request: CompleteJobRequest): Promise<TrainingJobRecord> {
    return this.lifecycle.complete(request);
  }
}
