import { Injectable } from '@nestjs/common';
import { CallerScope, ErrorCode, FineTuningMetadataFilter, ServiceError, Subjects, TrainingJobRecord } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { CreateFineTuningJobRequest, requestedHyperparameters } from './dto/create-fine-tuning-job.request';
import { FineTuningPageQuery } from './dto/list-fine-tuning.query';
import { FineTuningIdPrefix, fromFineTuningId } from './fine-tuning-ids';
import {
  OpenAiFineTuningCheckpoint,
  OpenAiFineTuningEvent,
  OpenAiFineTuningJob,
  openAiPage,
  OpenAiPage,
  toOpenAiCheckpoint,
  toOpenAiEvent,
  toOpenAiJob,
} from './openai-fine-tuning';

/** Creating a job reads and checks its files, line by line, before answering. */
const CREATE_TIMEOUT_MS = 60_000;

/**
 * OpenAI's fine-tuning routes over the training orchestrator's jobs: OpenAI's ids and shapes
 * here, the jobs' state there. Only jobs made through these routes are seen through them; any
 * other id, another entity's included, is not found.
 */
@Injectable()
export class FineTuningJobsService {
  constructor(private readonly rpc: RpcClient) {}

  async create(scope: CallerScope, body: CreateFineTuningJobRequest): Promise<OpenAiFineTuningJob> {
    const job = await this.rpc.request(
      Subjects.training.createFineTuningJob,
      {
        ...scope,
        model: body.model,
        training_file: body.training_file,
        validation_file: body.validation_file,
        suffix: body.suffix,
        seed: body.seed,
        metadata: body.metadata,
        hyperparameters: requestedHyperparameters(body),
      },
      { timeoutMs: CREATE_TIMEOUT_MS },
    );
    return toOpenAiJob(asFineTuning(job));
  }

  /** Newest first. */
  async list(scope: CallerScope, query: FineTuningPageQuery, metadata: FineTuningMetadataFilter | undefined): Promise<OpenAiPage<OpenAiFineTuningJob>> {
    const after = cursor('ftjob', query.after);
    const page = await this.rpc.request(Subjects.training.listJobs, { ...scope, fine_tuning: true, metadata, after, limit: query.limit });
    return openAiPage(page.data.map((job) => toOpenAiJob(asFineTuning(job))), page.has_more);
  }

  async retrieve(scope: CallerScope, id: string): Promise<OpenAiFineTuningJob> {
    const job = await this.found(id, (jobId) => this.rpc.request(Subjects.training.getJob, { ...scope, job_id: jobId, fine_tuning: true }));
    return toOpenAiJob(asFineTuning(job));
  }

  /** A queued job is cancelled at once; a running one stops at its next step (its status says running until then). */
  async cancel(scope: CallerScope, id: string): Promise<OpenAiFineTuningJob> {
    const job = await this.found(id, (jobId) => this.rpc.request(Subjects.training.cancelJob, { ...scope, job_id: jobId, fine_tuning: true }));
    return toOpenAiJob(asFineTuning(job));
  }

  /** Newest first, as OpenAI lists them. */
  async events(scope: CallerScope, id: string, query: FineTuningPageQuery): Promise<OpenAiPage<OpenAiFineTuningEvent>> {
    const job = await this.retrieve(scope, id);
    const after = cursor('ftevent', query.after);
    const page = await this.found(id, (jobId) =>
      this.rpc.request(Subjects.training.listEvents, { ...scope, job_id: jobId, fine_tuning: true, after, limit: query.limit, order: 'desc' }),
    );
    return openAiPage(page.data.map((event) => toOpenAiEvent(event, job)), page.has_more);
  }

  async checkpoints(scope: CallerScope, id: string, query: FineTuningPageQuery): Promise<OpenAiPage<OpenAiFineTuningCheckpoint>> {
    const after = cursor('ftckpt', query.after);
    const page = await this.found(id, (jobId) =>
      this.rpc.request(Subjects.training.listJobCheckpoints, { ...scope, job_id: jobId, fine_tuning: true, after, limit: query.limit }),
    );
    return openAiPage(page.data.map(toOpenAiCheckpoint), page.has_more);
  }

  /**
   * Runs `call` with the job's uuid. An id that is no `ftjob-` id, and a job that is not the
   * caller's (or no fine-tuning job), are one answer naming the id as it was given.
   */
  private async found<T>(id: string, call: (jobId: string) => Promise<T>): Promise<T> {
    const notFound = () => ServiceError.notFound(`Fine-tuning job ${shown(id)} not found`);
    const jobId = fromFineTuningId('ftjob', id);
    if (!jobId) throw notFound();
    return call(jobId).catch((err: unknown) => {
      throw err instanceof ServiceError && err.code === ErrorCode.NotFound ? notFound() : err;
    });
  }
}

/** The uuid behind a page's `after`, which must be an id of the listed kind. */
function cursor(prefix: FineTuningIdPrefix, after: string | undefined): string | undefined {
  if (after === undefined) return undefined;
  const id = fromFineTuningId(prefix, after);
  if (!id) throw ServiceError.invalid(`after: ${shown(after)} is not an id of this list (${prefix}-...)`, 'after');
  return id;
}

function shown(id: string): string {
  return id.length > 200 ? `${id.slice(0, 200)}...` : id;
}

/** Jobs asked for with fine_tuning: true always carry their fine-tuning details. */
function asFineTuning(job: TrainingJobRecord): TrainingJobRecord & { fine_tuning: NonNullable<TrainingJobRecord['fine_tuning']> } {
  if (!job.fine_tuning) throw new ServiceError(ErrorCode.Internal, `Training job ${job.id} has no fine-tuning details`);
  return job as TrainingJobRecord & { fine_tuning: NonNullable<TrainingJobRecord['fine_tuning']> };
}
