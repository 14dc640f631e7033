import { Injectable, Logger } from '@nestjs/common';
import {
  CallerScope,
  CreateJobReply,
  CreateRlJobRequest,
  CreateSftJobRequest,
  EndedJobsReply,
  EndedJobsRequest,
  ErrorCode,
  FineTuningDetails,
  isUuid,
  JobCheckpointRecord,
  JobRequest,
  ListJobCheckpointsRequest,
  ListJobEventsRequest,
  ListTrainingJobsRequest,
  ModelRecord,
  Page,
  RlJobPayloadV3,
  ServiceError,
  servingName,
  SftJobPayload,
  Subjects,
  TrainingEventRecord,
  TrainingEventType,
  TrainingJobStatus,
  TrainingJobPayload,
  TrainingJobRecord,
  TERMINAL_JOB_STATUSES,
} from '@trainyard/contracts';
import { BlobStore, MessageBus, RpcClient } from '@trainyard/messaging';
import { rlTrainingGroups, validateExperimentalConfig, validateSftConfig, validateSftExperimentalConfig } from '@trainyard/art';
import { randomUUID } from 'node:crypto';
import { sftConversations } from '../data/sft-data';
import { TrainingDataSource } from '../data/training-data.source';
import { issueAt, pathToLoc } from './issues';
import { JobQueue } from './job-queue';
import { gradientStepNumber, toEventRecord, toJobRecord } from './job-record';
import { FINAL_EVENT_KEY, JobRow, TrainingJobRepository } from './training-job.repository';

/** A validated job, ready to be stored and queued. */
export interface AcceptedJob {
  payload: TrainingJobPayload;
  /** The experimental_config as sent, for the job's record (the payload holds what it resolved to). */
  experimentalConfig: Record<string, unknown> | null;
  ignoredConfigKeys: string[];
  /** The job's id, when something made before it is named after it. */
  id?: string;
  fineTuning?: FineTuningDetails;
}

/** Creation (everything validated before a job exists), reads and cancellation of training jobs. */
@Injectable()
export class TrainingJobsService {
  private readonly logger = new Logger(TrainingJobsService.name);

  constructor(
    private readonly jobs: TrainingJobRepository,
    private readonly queue: JobQueue,
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
    private readonly data: TrainingDataSource,
    private readonly bus: MessageBus,
  ) {}

  /**
   * The groups are validated here and stored once, by the registry, as one object in the
   * artifact store: the job's payload names it, and so do its kept trajectories and its
   * worker's read. The gateway's blob is read here and taken by the registry, never parked again.
   */
  async createRl(request: CreateRlJobRequest): Promise<CreateJobReply> {
    const model = await this.ownedModel(request, request.model_id);
    const id = randomUUID();
    let payload: RlJobPayloadV3;
    let ignoredConfigKeys: string[];
    try {
      const raw = await this.blobs.readJson(request.trajectory_groups);
      const { config, errors, ignored } = validateExperimentalConfig(request.experimental_config);
      const { settings, klReference } = config;
      const { issues } = rlTrainingGroups(raw, settings);
      const problems = [
        ...errors.map((e) => issueAt(['body', 'experimental_config', e.key], `experimental_config.${e.key} ${e.message}`)),
        ...issues.map((i) => issueAt(pathToLoc(i.path), `${i.path} ${i.message}`)),
      ];
      if (problems.length > 0) throw ServiceError.validation(problems);
      if (klReference && 'model' in klReference) await this.checkKlReference(request, klReference.model);
      // Stored for the job before the job is: a stored job's groups are always there to read.
      const stored = await this.rpc.request(
        Subjects.registry.storeJobTrajectories,
        { entity_id: request.entity_id, entity_name: request.entity_name, model_id: model.id, job_id: id, trajectory_groups: request.trajectory_groups },
        { timeoutMs: STORE_GROUPS_TIMEOUT_MS },
      );
      payload = { version: 3, type: 'rl', model_name: servingName(model), entity_name: request.entity_name, trajectory_groups: stored, settings, kl_reference: klReference };
      ignoredConfigKeys = ignored.map((key) => `experimental_config.${key}`);
    } catch (err) {
      await this.blobs.discard(request.trajectory_groups);
      throw err;
    }
    const job = await this.accept(request, model, { id, payload, experimentalConfig: request.experimental_config, ignoredConfigKeys });
    this.keepTrajectories(request, job);
    return { id: job.id };
  }

  /**
   * The job's groups, as stored for it, go to the registry's kept trajectories (split "train",
   * at the step that was newest when the job was created), so the job's page can show what it
   * trained on; the rows name the stored groups. Not awaited: keeping them must not delay the
   * reply, and the job stands without them (a failure is logged).
   */
  private keepTrajectories(scope: CallerScope, job: { id: string; modelId: string; createdAt: Date }): void {
    const caller = { entity_id: scope.entity_id, entity_name: scope.entity_name };
    this.rpc
      .request(
        Subjects.registry.recordTrajectories,
        { ...caller, model_id: job.modelId, job_id: job.id, split: 'train', as_of: job.createdAt.toISOString() },
        { timeoutMs: 60_000 },
      )
      .catch((err: Error) => this.logger.warn(`job ${job.id}: its trajectories were not kept: ${err.message}`));
  }

  /** Of these job ids, those that will not run again: ended, or naming no job (the registry then lets go of their groups). */
  async ended(request: EndedJobsRequest): Promise<EndedJobsReply> {
    const unfinished = new Set(await this.jobs.unfinishedAmong(request.job_ids.filter(isUuid)));
    return { job_ids: request.job_ids.filter((id) => !unfinished.has(id)) };
  }

  async createSft(request: CreateSftJobRequest): Promise<CreateJobReply> {
    const model = await this.ownedModel(request, request.model_id);
    const config = validateSftConfig(request.config);
    const experimental = validateSftExperimentalConfig(request.experimental_config);
    const problems = [
      ...config.errors.map((e) => issueAt(['body', 'config', e.key], `config.${e.key} ${e.message}`)),
      ...experimental.errors.map((e) => issueAt(['body', 'experimental_config', e.key], `experimental_config.${e.key} ${e.message}`)),
    ];
    if (problems.length > 0) throw ServiceError.validation(problems);
    const text = await this.data.read(request, request.training_data_url);
    const conversations = sftConversations(text, 'training_data_url', 'training data ');
    const payload: SftJobPayload = { version: 2, type: 'sft', model_name: servingName(model), entity_name: request.entity_name, conversations, settings: config.config };
    const ignored = [...config.ignored.map((key) => `config.${key}`), ...experimental.ignored.map((key) => `experimental_config.${key}`)];
    const job = await this.accept(request, model, { payload, experimentalConfig: null, ignoredConfigKeys: ignored });
    return { id: job.id };
  }

  async get(request: JobRequest): Promise<TrainingJobRecord> {
    return (await this.records([await this.owned(request)]))[0];
  }

  async list(request: ListTrainingJobsRequest): Promise<Page<TrainingJobRecord>> {
    let after: { createdAt: Date; id: string } | undefined;
    if (request.after !== undefined) {
      const job = isUuid(request.after) ? await this.jobs.findSummary(request.after) : null;
      if (!job || job.entityId !== request.entity_id) throw ServiceError.invalid(`after: ${request.after} is not one of your training jobs`, 'after');
      after = { createdAt: job.createdAt, id: job.id };
    }
    // Another entity's model, or no model at all, simply has no jobs of this caller.
    const modelId = request.model_id;
    if (modelId !== undefined && !isUuid(modelId)) return emptyPage();
    const rows = await this.jobs.listForEntity(request.entity_id, {
      modelId,
      fineTuning: request.fine_tuning,
      metadata: request.metadata,
      limit: request.limit,
      after,
    });
    const data = await this.records(rows.slice(0, request.limit));
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > request.limit };
  }

  /** Job records, the running ones with how far they got. */
  private async records(rows: Omit<JobRow, 'payload'>[]): Promise<TrainingJobRecord[]> {
    const progress = await this.jobs.progress(rows.filter((r) => r.status === 'running').map((r) => r.id));
    return rows.map((row) => toJobRecord(row, progress.get(row.id) ?? null));
  }

  async listEvents(request: ListJobEventsRequest): Promise<Page<TrainingEventRecord>> {
    const job = await this.owned(request);
    let afterSeq: bigint | undefined;
    if (request.after !== undefined) {
      const after = isUuid(request.after) ? await this.jobs.findEvent(job.id, request.after) : null;
      if (!after) throw ServiceError.invalid(`after: ${request.after} is not an event of training job ${job.id}`, 'after');
      afterSeq = after.seq;
    }
    const rows = await this.jobs.events(job.id, request.limit, afterSeq, request.order);
    const data = rows.slice(0, request.limit).map(toEventRecord);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > request.limit };
  }

  /**
   * The checkpoint the job produced, as the registry still holds it: none before the job
   * succeeded, nor once the checkpoint (or its model) was deleted. At most one per job, so a
   * page after it is empty.
   */
  async listCheckpoints(request: ListJobCheckpointsRequest): Promise<Page<JobCheckpointRecord>> {
    const job = await this.owned(request);
    if (request.after !== undefined && request.after !== job.id) throw ServiceError.invalid(`after: ${request.after} is not a checkpoint of training job ${job.id}`, 'after');
    const found = job.checkpointStep === null || request.after === job.id ? null : await this.findCheckpoint(request, job.modelId, job.id, job.checkpointStep);
    if (!found) return emptyPage();
    const { model, checkpoint } = found;
    const last = await this.jobs.lastEvent(job.id, 'gradient_step');
    const data: JobCheckpointRecord[] = [
      {
        id: checkpoint.id,
        job_id: job.id,
        model_id: model.id,
        step: checkpoint.step,
        model_name: servingName(model, checkpoint.step),
        num_gradient_steps: last ? (gradientStepNumber(last) ?? 0) : 0,
        last_step_metrics: last ? (toEventRecord(last).data as Record<string, number>) : {},
        created_at: checkpoint.created_at,
      },
    ];
    return { object: 'list', data, first_id: checkpoint.id, last_id: checkpoint.id, has_more: false };
  }

  /** The model's checkpoint at `step`, if it is still the one the job wrote (its id is the job's). */
  private async findCheckpoint(scope: CallerScope, modelId: string, jobId: string, step: number) {
    const model = await this.ownedModel(scope, modelId).catch((err: unknown) => {
      if (err instanceof ServiceError && err.code === ErrorCode.NotFound) return null;
      throw err;
    });
    if (!model) return null;
    // Newest first: the job's checkpoint is usually on the first page, and steps only grow.
    let after: string | undefined;
    for (;;) {
      const page = await this.rpc.request(Subjects.registry.listCheckpoints, { ...scope, model_id: modelId, order: 'desc', limit: 100, after });
      const checkpoint = page.data.find((c) => c.step === step);
      if (checkpoint) return checkpoint.id === jobId ? { model, checkpoint } : null;
      if (!page.has_more || (page.data.at(-1)?.step ?? 0) < step) return null;
      after = page.last_id ?? undefined;
    }
  }

  /**
   * A queued job is cancelled at once; a running one is flagged, and its worker stops
   * between steps and reports it (no checkpoint). Cancelling a cancelled job is a no-op.
   */
  async cancel(request: JobRequest): Promise<TrainingJobRecord> {
    const job = await this.owned(request);
    if (job.status === 'succeeded' || job.status === 'failed') {
      throw ServiceError.conflict(`Training job ${job.id} already ${job.status}; it cannot be cancelled`);
    }
    if (job.status !== 'cancelled') {
      await this.jobs.requestCancel(job.id);
      if (await this.finish(job.id, 'cancelled', { errorMessage: CANCELLED }, 'queued')) {
        await this.queue.advance(job.modelId);
      } else {
        this.bus.publish(Subjects.training.cancelRequested, { job_id: job.id });
      }
    }
    return (await this.records([(await this.jobs.findSummary(job.id)) as JobRow]))[0];
  }

  /** Appends an event once per dedupe key and wakes whoever streams this job's events. */
  async appendEvent(jobId: string, type: TrainingEventType, data: Record<string, unknown>, dedupeKey: string): Promise<void> {
    if (await this.jobs.appendEvent(jobId, type, data, dedupeKey)) {
      this.bus.publish(Subjects.training.eventsAppended, { job_id: jobId }, { suffix: jobId });
    }
  }

  /**
   * Ends a job that has not ended (and is in `onlyFrom`, when given) with its final event, in
   * one transaction; false when it had already ended.
   */
  async finish(jobId: string, status: TrainingJobStatus, fields: { errorMessage?: string; checkpointStep?: number }, onlyFrom?: TrainingJobStatus): Promise<boolean> {
    const ended = await this.jobs.finish(jobId, status, fields, finalEvent(status, fields.errorMessage ?? null), onlyFrom);
    if (ended) this.bus.publish(Subjects.training.eventsAppended, { job_id: jobId }, { suffix: jobId });
    return ended;
  }

  /** The job's final event, if it is not stored yet (a job ended before events were written with it). */
  async recordFinalEvent(jobId: string, status: string, errorMessage: string | null): Promise<void> {
    const { type, data } = finalEvent(status, errorMessage);
    await this.appendEvent(jobId, type, data, FINAL_EVENT_KEY);
  }

  /** Stores a validated job (with the experimental_config it was sent, for its record) and queues it. */
  async accept(scope: CallerScope, model: ModelRecord, accepted: AcceptedJob): Promise<Omit<JobRow, 'payload'>> {
    const { payload, experimentalConfig, ignoredConfigKeys, id, fineTuning } = accepted;
    const job = await this.jobs.create({ id, entityId: scope.entity_id, modelId: model.id, type: payload.type, payload, experimentalConfig, ignoredConfigKeys, fineTuning });
    if (ignoredConfigKeys.length > 0) this.logger.log(`job ${job.id}: accepted, ignoring ${ignoredConfigKeys.join(', ')}`);
    // The job is stored, so it is accepted: a failed publish is retried by the queue, and a
    // 503 here would only make the client create it a second time.
    await this.queue.advance(model.id).catch((err: Error) => this.logger.warn(`job ${job.id} stored; queueing it later: ${err.message}`));
    return job;
  }

  /**
   * kl_ref_adapter_path names a checkpoint of one of the caller's models, resolved by the
   * registry as a chat model name is. It is never taken as a path: a worker reading any path
   * a caller gives would read other entities' adapters, or any file on its disk.
   */
  private async checkKlReference(scope: CallerScope, reference: string): Promise<void> {
    const resolved = await this.rpc
      .request(Subjects.registry.resolveModel, { entity_id: scope.entity_id, entity_name: scope.entity_name, model: reference })
      .catch((err: unknown) => {
        if (err instanceof ServiceError && err.code === ErrorCode.ModelNotFound) return null;
        throw err;
      });
    if (resolved?.adapter_bundle) return;
    const shown = reference.length > 200 ? `${reference.slice(0, 200)}...` : reference;
    throw ServiceError.validation([
      issueAt(
        ['body', 'experimental_config', 'kl_ref_adapter_path'],
        `experimental_config.kl_ref_adapter_path must name a checkpoint of one of your models ` +
          `(wandb-artifact:///{entity}/{project}/{name}:step{N}); ${JSON.stringify(shown)} is not one`,
      ),
    ]);
  }

  private ownedModel(scope: CallerScope, modelId: string): Promise<ModelRecord> {
    return this.rpc.request(Subjects.registry.getModel, { entity_id: scope.entity_id, entity_name: scope.entity_name, model_id: modelId });
  }

  /** The caller's job; with `fine_tuning`, only one made through /v1/fine_tuning/jobs. Anything else does not exist for them. */
  private async owned(request: JobRequest): Promise<Omit<JobRow, 'payload'>> {
    const job = isUuid(request.job_id) ? await this.jobs.findSummary(request.job_id) : null;
    if (!job || job.entityId !== request.entity_id || (request.fine_tuning && job.fineTuning === null)) {
      throw ServiceError.notFound(`Training job ${request.job_id} not found`);
    }
    return job;
  }
}

export const CANCELLED = 'Training job was cancelled';

/** Storing an RL job's groups (megabytes into the artifact store) within the gateway's 30 s for the whole creation. */
const STORE_GROUPS_TIMEOUT_MS = 25_000;

/** The one final event of a job: training_ended on success, training_failed otherwise. */
function finalEvent(status: string, errorMessage: string | null): { type: TrainingEventType; data: Record<string, unknown> } {
  if (status === 'succeeded') return { type: 'training_ended', data: {} };
  return { type: 'training_failed', data: { error_message: errorMessage ?? `training job ${status}` } };
}

export function isTerminal(status: string): boolean {
  return (TERMINAL_JOB_STATUSES as readonly string[]).includes(status);
}

function emptyPage<T>(): Page<T> {
  return { object: 'list', data: [], first_id: null, last_id: null, has_more: false };
}
