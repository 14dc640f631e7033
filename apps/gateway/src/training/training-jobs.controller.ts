import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { CreateJobReply, Page, Subjects, TrainingJobRecord } from '@trainyard/contracts';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import type { Response } from 'express';
import { Caller, CallerParam } from '../auth/caller';
import { Idempotent } from '../idempotency/idempotent.decorator';
import { scopeOf } from '../registry/caller-scope';
import { CreateSftTrainingJobRequest, CreateTrainingJobRequest } from './dto/create-training-job.request';
import { ListJobEventsQuery } from './dto/list-job-events.query';
import { ListTrainingJobsQuery } from './dto/list-training-jobs.query';
import { JobEventsStream } from './job-events.stream';

/** Creating an SFT job may fetch and check its whole dataset before answering. */
const SFT_CREATE_TIMEOUT_MS = 60_000;

@Controller('v1/preview')
export class TrainingJobsController {
  constructor(
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
    private readonly stream: JobEventsStream,
  ) {}

  /** Trajectory groups run to megabytes: they travel to the orchestrator as a blob. */
  @Post('training-jobs')
  @HttpCode(200)
  @Idempotent()
  async createRl(@CallerParam() caller: Caller, @Body() body: CreateTrainingJobRequest): Promise<CreateJobReply> {
    const groups = await this.blobs.putJson(body.trajectory_groups);
    return this.rpc.request(
      Subjects.training.createRlJob,
      { ...scopeOf(caller), model_id: body.model_id, trajectory_groups: groups, experimental_config: body.experimental_config },
      { timeoutMs: 30_000 },
    );
  }

  @Post('sft-training-jobs')
  @HttpCode(200)
  @Idempotent()
  createSft(@CallerParam() caller: Caller, @Body() body: CreateSftTrainingJobRequest): Promise<CreateJobReply> {
    return this.rpc.request(
      Subjects.training.createSftJob,
      {
        ...scopeOf(caller),
        model_id: body.model_id,
        training_data_url: body.dataUrl,
        config: body.config,
        experimental_config: body.experimental_config,
      },
      { timeoutMs: SFT_CREATE_TIMEOUT_MS },
    );
  }

  /** Our addition: the caller's jobs, newest first, optionally of one model. */
  @Get('training-jobs')
  list(@CallerParam() caller: Caller, @Query() query: ListTrainingJobsQuery): Promise<Page<TrainingJobRecord>> {
    return this.rpc.request(Subjects.training.listJobs, { ...scopeOf(caller), model_id: query.model_id, after: query.after, limit: query.limit });
  }

  @Get('training-jobs/:job_id')
  get(@CallerParam() caller: Caller, @Param('job_id') jobId: string): Promise<TrainingJobRecord> {
    return this.rpc.request(Subjects.training.getJob, { ...scopeOf(caller), job_id: jobId });
  }

  /** Our addition: stops a queued or running job; no checkpoint is made. */
  @Post('training-jobs/:job_id/cancel')
  @HttpCode(200)
  cancel(@CallerParam() caller: Caller, @Param('job_id') jobId: string): Promise<TrainingJobRecord> {
    return this.rpc.request(Subjects.training.cancelJob, { ...scopeOf(caller), job_id: jobId });
  }

  /** JSON pages oldest first; with `Accept: text/event-stream`, the same events pushed live (resuming from Last-Event-ID). */
  @Get('training-jobs/:job_id/events')
  async events(
    @CallerParam() caller: Caller,
    @Param('job_id') jobId: string,
    @Query() query: ListJobEventsQuery,
    @Headers('accept') accept: string | undefined,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    const sse = (accept ?? '').includes('text/event-stream');
    const after = (sse && lastEventId) || query.after;
    const page = await this.rpc.request(Subjects.training.listEvents, {
      ...scopeOf(caller),
      job_id: jobId,
      after,
      limit: sse ? 100 : query.limit,
    });
    if (!sse) {
      res.status(200).json(page);
      return;
    }
    await this.stream.relay(scopeOf(caller), jobId, after, page, res);
  }
}
