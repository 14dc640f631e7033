import { Injectable } from '@nestjs/common';
import {
  ListTrajectoriesRequest,
  Page,
  RecordTrajectoriesReply,
  RecordTrajectoriesRequest,
  ServiceError,
  TrajectoryRecord,
} from '@trainyard/contracts';
import { BlobStore } from '@trainyard/messaging';
import { randomUUID } from 'node:crypto';
import { CheckpointRepository } from '../checkpoints/checkpoint.repository';
import { isUuid } from '../common/ids';
import { RegistryConfig } from '../config/registry.config';
import { ModelsService } from '../models/models.service';
import { RetentionLimits, TrajectoryRepository } from './trajectory.repository';
import { toTrajectoryRecord } from './trajectory-record';
import { trajectoryRows } from './trajectory-rows';

/**
 * The trajectories each model was sent, per step and split, within the configured retention
 * limits (TRAJECTORY_RETENTION_COUNT and _BYTES per model; the oldest go first).
 */
@Injectable()
export class TrajectoriesService {
  private readonly limits: RetentionLimits;

  constructor(
    private readonly models: ModelsService,
    private readonly checkpoints: CheckpointRepository,
    private readonly trajectories: TrajectoryRepository,
    private readonly blobs: BlobStore,
    config: RegistryConfig,
  ) {
    this.limits = { maxCount: config.TRAJECTORY_RETENTION_COUNT, maxBytes: config.TRAJECTORY_RETENTION_BYTES };
  }

  /** POST .../log: keeps the groups at the checkpoint's step and merges its metrics into it, together. */
  async keepLogged(checkpoint: { id: string; modelId: string; step: number }, split: string, groups: unknown, metrics: Record<string, number>): Promise<void> {
    const batch = { modelId: checkpoint.modelId, batchId: randomUUID(), jobId: null, step: checkpoint.step, split, rows: this.keepable(groups) };
    await this.trajectories.store(batch, this.limits, { checkpointId: checkpoint.id, values: metrics });
  }

  /** A training job's groups, at the model's newest step when the job was created (the policy that produced them); once per job. */
  async record(request: RecordTrajectoriesRequest): Promise<RecordTrajectoriesReply> {
    const model = await this.models.getOwned(request.entity_id, request.model_id);
    const groups = await this.blobs.takeJson(request.trajectory_groups);
    const asOf = new Date(request.as_of);
    if (Number.isNaN(asOf.getTime())) throw ServiceError.invalid(`as_of: ${request.as_of} is not a time`, 'as_of');
    const current = (await this.checkpoints.latestAt(model.id, asOf)) ?? (await this.checkpoints.latest(model.id));
    if (!current) throw ServiceError.conflict(`Model ${model.id} has no checkpoint to keep trajectories at`);
    const batch = { modelId: model.id, batchId: request.job_id, jobId: request.job_id, step: current.step, split: request.split, rows: this.keepable(groups) };
    const stored = await this.trajectories.store(batch, this.limits);
    return { step: current.step, stored };
  }

  /** A trajectory larger than the byte limit on its own is not kept (it would push out everything else). */
  private keepable(groups: unknown) {
    return trajectoryRows(groups).filter((row) => row.bytes <= this.limits.maxBytes);
  }

  async list(request: ListTrajectoriesRequest): Promise<Page<TrajectoryRecord>> {
    const model = await this.models.getOwned(request.entity_id, request.model_id);
    let afterSeq: bigint | undefined;
    if (request.after !== undefined) {
      const after = await this.trajectories.findInModel(model.id, request.after);
      if (!after) throw ServiceError.invalid(`after: ${request.after} is not a trajectory of model ${model.id}`, 'after');
      afterSeq = after.seq;
    }
    // A job id that is not a uuid names no job: nothing matches it.
    if (request.job_id !== undefined && !isUuid(request.job_id)) return { object: 'list', data: [], first_id: null, last_id: null, has_more: false };
    const filters = { step: request.step, split: request.split, jobId: request.job_id, minReward: request.min_reward, maxReward: request.max_reward };
    const rows = await this.trajectories.page(model.id, filters, request.order, request.limit, afterSeq);
    const data = rows.slice(0, request.limit).map(toTrajectoryRecord);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > request.limit };
  }
}
