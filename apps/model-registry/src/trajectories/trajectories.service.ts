import { Inject, Injectable } from '@nestjs/common';
import { ARTIFACT_STORE, ArtifactStore } from '@trainyard/artifacts';
import {
  ListTrajectoriesRequest,
  Page,
  RecordTrajectoriesReply,
  RecordTrajectoriesRequest,
  ServiceError,
  StoredTrajectoryGroups,
  StoreJobTrajectoriesRequest,
  TrajectoryRecord,
} from '@trainyard/contracts';
import { unpackJson } from '@trainyard/db';
import { BlobStore } from '@trainyard/messaging';
import { randomUUID } from 'node:crypto';
import { CheckpointRepository } from '../checkpoints/checkpoint.repository';
import { isUuid } from '../common/ids';
import { RegistryConfig } from '../config/registry.config';
import { ModelsService } from '../models/models.service';
import { RetentionLimits, TrajectoryRepository, TrajectoryRow } from './trajectory.repository';
import { TrajectoryObjects } from './trajectory-objects';
import { toTrajectoryRecord, TrajectoryContent } from './trajectory-record';
import { trajectoryAt, trajectoryRows } from './trajectory-rows';

/**
 * The trajectories each model was sent, per step and split, within the configured retention
 * limits (TRAJECTORY_RETENTION_COUNT and _BYTES per model; the oldest go first). A logged
 * trajectory's row holds its JSON; an RL job's groups are one object in the artifact store,
 * stored once for the job, and its trajectories' rows name that object.
 */
@Injectable()
export class TrajectoriesService {
  private readonly limits: RetentionLimits;

  constructor(
    private readonly models: ModelsService,
    private readonly checkpoints: CheckpointRepository,
    private readonly trajectories: TrajectoryRepository,
    private readonly objects: TrajectoryObjects,
    private readonly blobs: BlobStore,
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
    config: RegistryConfig,
  ) {
    this.limits = { maxCount: config.TRAJECTORY_RETENTION_COUNT, maxBytes: config.TRAJECTORY_RETENTION_BYTES };
  }

  /** POST .../log: keeps the groups at the checkpoint's step and merges its metrics into it, together. */
  async keepLogged(checkpoint: { id: string; modelId: string; step: number }, split: string, groups: unknown, metrics: Record<string, number>): Promise<void> {
    const batch = { modelId: checkpoint.modelId, batchId: randomUUID(), jobId: null, step: checkpoint.step, split, rows: this.keepable(groups) };
    await this.trajectories.store(batch, this.limits, { checkpointId: checkpoint.id, values: metrics });
  }

  /**
   * An RL job's groups, before the job is stored: the blob the gateway parked (the orchestrator
   * validated it and left it for us) becomes one object in the artifact store, held for the job
   * until it has ended. Bytes first, hold after: a hold always names a complete object.
   */
  async storeJobGroups(request: StoreJobTrajectoriesRequest): Promise<StoredTrajectoryGroups> {
    const model = await this.models.getOwned(request.entity_id, request.model_id);
    if (!isUuid(request.job_id)) throw ServiceError.invalid(`job_id: ${request.job_id} is not a job id`, 'job_id');
    const data = await this.blobs.take(request.trajectory_groups);
    const stored = await this.store.put(data);
    // Stored again if the sweep removed identical, unreferenced groups meanwhile.
    const stillStored = async () => {
      if (!(await this.store.has(stored.sha256))) await this.store.put(data);
    };
    const hold = await this.trajectories.holdJobGroups({ jobId: request.job_id, modelId: model.id, sha256: stored.sha256, bytes: stored.bytes }, stillStored);
    return { sha256: hold.sha256, bytes: hold.bytes };
  }

  /**
   * A stored job's groups kept as trajectories, at the model's newest step when the job was
   * created (the policy that produced them); once per job. The rows name the job's object.
   */
  async record(request: RecordTrajectoriesRequest): Promise<RecordTrajectoriesReply> {
    const model = await this.models.getOwned(request.entity_id, request.model_id);
    const held = isUuid(request.job_id) ? await this.trajectories.findJobGroups(request.job_id) : null;
    if (!held || held.modelId !== model.id) throw ServiceError.notFound(`No trajectory groups are stored for job ${request.job_id} of model ${model.id}`);
    const asOf = new Date(request.as_of);
    if (Number.isNaN(asOf.getTime())) throw ServiceError.invalid(`as_of: ${request.as_of} is not a time`, 'as_of');
    const current = (await this.checkpoints.latestAt(model.id, asOf)) ?? (await this.checkpoints.latest(model.id));
    if (!current) throw ServiceError.conflict(`Model ${model.id} has no checkpoint to keep trajectories at`);
    const rows = this.keepable(await this.objects.groups(held.sha256));
    const batch = { modelId: model.id, batchId: request.job_id, jobId: request.job_id, step: current.step, split: request.split, rows, objectSha256: held.sha256 };
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
    const page = rows.slice(0, request.limit);
    const groups = await this.storedGroups(page);
    const data = page.map((row) => toTrajectoryRecord(row, content(row, groups)));
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > request.limit };
  }

  /** The stored groups the rows name, each read once. */
  private async storedGroups(rows: TrajectoryRow[]): Promise<Map<string, unknown>> {
    const digests = [...new Set(rows.flatMap((row) => (row.objectSha256 === null ? [] : [row.objectSha256])))];
    return new Map(await Promise.all(digests.map(async (sha256) => [sha256, await this.objects.groups(sha256)] as const)));
  }
}

/** A row's trajectory and group: its own JSON, or its place in the job's stored groups. */
function content(row: TrajectoryRow, groups: Map<string, unknown>): TrajectoryContent {
  if (row.objectSha256 === null) {
    return { trajectory: unpackJson(row.data) as Record<string, unknown>, group: unpackJson(row.groupData) as Record<string, unknown> };
  }
  const found = trajectoryAt(groups.get(row.objectSha256), row.groupIndex, row.trajectoryIndex);
  if (!found) throw new Error(`Trajectory ${row.id} is not in the groups ${row.objectSha256} it names`);
  return { trajectory: found.data, group: found.groupData };
}
