import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import type { FineTuningMetadataFilter } from '@trainyard/contracts';
import { Caller, CallerParam } from '../auth/caller';
import { Idempotent } from '../idempotency/idempotent.decorator';
import { scopeOf } from '../registry/caller-scope';
import { CreateFineTuningJobRequest } from './dto/create-fine-tuning-job.request';
import { FineTuningPageQuery } from './dto/list-fine-tuning.query';
import { MetadataFilter } from './dto/metadata-filter';
import { FineTuningJobsService } from './fine-tuning-jobs.service';
import { OpenAiFineTuningCheckpoint, OpenAiFineTuningEvent, OpenAiFineTuningJob, OpenAiPage } from './openai-fine-tuning';

/** OpenAI's fine-tuning jobs API (client.fineTuning.jobs), over our SFT jobs. */
@Controller('v1/fine_tuning/jobs')
export class FineTuningJobsController {
  constructor(private readonly jobs: FineTuningJobsService) {}

  @Post()
  @HttpCode(200)
  @Idempotent()
  create(@CallerParam() caller: Caller, @Body() body: CreateFineTuningJobRequest): Promise<OpenAiFineTuningJob> {
    return this.jobs.create(scopeOf(caller), body);
  }

  @Get()
  list(
    @CallerParam() caller: Caller,
    @Query() query: FineTuningPageQuery,
    @MetadataFilter() metadata: FineTuningMetadataFilter | undefined,
  ): Promise<OpenAiPage<OpenAiFineTuningJob>> {
    return this.jobs.list(scopeOf(caller), query, metadata);
  }

  @Get(':job_id')
  retrieve(@CallerParam() caller: Caller, @Param('job_id') id: string): Promise<OpenAiFineTuningJob> {
    return this.jobs.retrieve(scopeOf(caller), id);
  }

  @Post(':job_id/cancel')
  @HttpCode(200)
  cancel(@CallerParam() caller: Caller, @Param('job_id') id: string): Promise<OpenAiFineTuningJob> {
    return this.jobs.cancel(scopeOf(caller), id);
  }

  @Get(':job_id/events')
  events(@CallerParam() caller: Caller, @Param('job_id') id: string, @Query() query: FineTuningPageQuery): Promise<OpenAiPage<OpenAiFineTuningEvent>> {
    return this.jobs.events(scopeOf(caller), id, query);
  }

  @Get(':job_id/checkpoints')
  checkpoints(@CallerParam() caller: Caller, @Param('job_id') id: string, @Query() query: FineTuningPageQuery): Promise<OpenAiPage<OpenAiFineTuningCheckpoint>> {
    return this.jobs.checkpoints(scopeOf(caller), id, query);
  }
}
