import { Injectable, Logger } from '@nestjs/common';
import {
  ClaimJobReply,
  ClaimJobRequest,
  CompleteJobRequest,
  JobProgress,
  JobProgressReply,
  ServiceError,
  TrainingJobPayload,
  TrainingJobRecord,
} from '@trainyard/contracts';
import { BlobStore } from '@trainyard/messaging';
import { UnrunnablePayloadError, workPayload } from '../jobs/job-payload';
import { JobQueue } from '../jobs/job-queue';
import { toJobRecord } from '../jobs/job-record';
import { TrainingJobRepository } from '../jobs/training-job.repository';
import { CANCELLED, isTerminal, TrainingJobsService } from '../jobs/training-jobs.service';

/**
 * The worker's side of a job: claim, progress, outcome. Every call is safe to repeat, because
 * JetStream redelivers a job whose worker died and a worker retries a report it got no answer to.
 */
@Injectable()
export class JobLifecycleService {
  private readonly logger = new Logger(JobLifecycleService.name);

  constructor(
    private readonly jobs: TrainingJobRepository,
    private readonly service: TrainingJobsService,
    private readonly queue: JobQueue,
    private readonly blobs: BlobStore,
  ) {}

  async claim(request: ClaimJobRequest): Promise<ClaimJobReply> {
    const job = await this.jobs.find(request.job_id);
    if (!job) return { action: 'skip', reason: 'no such job' };
    if (isTerminal(job.status)) return { action: 'skip', reason: `job already ${job.status}` };
    if (job.cancelRequested) {
      // Cancelled while its worker was gone: nobody else will finish it.
      await this.complete({ job_id: job.id, outcome: 'cancelled' });
      return { action: 'skip', reason: 'job was cancelled' };
    }
    let payload: TrainingJobPayload;
    try {
      payload = workPayload(job.type, job.payload);
    } catch (err) {
      if (!(err instanceof UnrunnablePayloadError)) throw err;
      await this.complete({ job_id: job.id, outcome: 'failed', error_message: err.message });
      return { action: 'skip', reason: 'its payload does not validate' };
    }
    // A running job restarts only when the message it was claimed through comes back (its holder stopped); any other message of it is a duplicate.
    if (!(await this.jobs.claim(job.id, request.message_seq))) return { action: 'skip', reason: `job is ${job.status} elsewhere` };
    if (job.status === 'running') this.logger.warn(`Restarting job ${job.id} on ${request.worker}: its previous worker stopped`);
    return {
      action: 'run',
      job: {
        job_id: job.id,
        type: job.type,
        model_id: job.modelId,
        entity_id: job.entityId,
        entity_name: payload.entity_name,
        model_name: payload.model_name,
        payload: await this.blobs.putJson(payload),
      },
    };
  }

  async progress(report: JobProgress): Promise<JobProgressReply> {
    const job = await this.jobs.findSummary(report.job_id);
    if (!job) throw ServiceError.notFound(`Training job ${report.job_id} not found`);
    if (!isTerminal(job.status)) {
      if (report.kind === 'started') {
        const ignored = job.ignoredConfigKeys ?? [];
        const reason = report.no_gradient_steps_reason ?? null;
        await this.jobs.setNoStepsReason(job.id, reason);
        const data = {
          num_sequences: report.num_sequences,
          ...(ignored.length > 0 ? { ignored_config_keys: ignored } : {}),
          ...(reason !== null ? { no_gradient_steps_reason: reason } : {}),
        };
        await this.service.appendEvent(job.id, 'training_started', data, 'started');
      } else {
        await this.service.appendEvent(job.id, 'gradient_step', numeric(report.metrics), `step:${report.step}`);
      }
    }
    return { cancel_requested: job.cancelRequested || isTerminal(job.status) };
  }

  async complete(request: CompleteJobRequest): Promise<TrainingJobRecord> {
    const status = request.outcome;
    const fields =
      request.outcome === 'succeeded'
        ? { checkpointStep: request.checkpoint_step }
        : { errorMessage: request.outcome === 'failed' ? request.error_message : CANCELLED };
    await this.service.finish(request.job_id, status, fields);
    const job = await this.jobs.findSummary(request.job_id);
    if (!job) throw ServiceError.notFound(`Training job ${request.job_id} not found`);
    // A repeated report of a job that ended before its final event was stored with it.
    await this.service.recordFinalEvent(job.id, job.status, job.errorMessage);
    await this.queue.advance(job.modelId);
    return toJobRecord(job);
  }
}

function numeric(metrics: Record<string, unknown>): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics).filter(([, v]) => typeof v === 'number' && Number.isFinite(v))) as Record<string, number>;
}
