import { Injectable } from '@nestjs/common';
import { LogTrajectoriesReply, LogTrajectoriesRequest, ServiceError } from '@trainyard/contracts';
import { BlobStore } from '@trainyard/messaging';
import { CheckpointRepository } from '../checkpoints/checkpoint.repository';
import { ModelsService } from '../models/models.service';
import { TrajectoriesService } from '../trajectories/trajectories.service';
import { computeTrajectoryMetrics, prefixMetrics } from './trajectory-metrics';

@Injectable()
export class MetricsLogService {
  constructor(
    private readonly models: ModelsService,
    private readonly checkpoints: CheckpointRepository,
    private readonly trajectories: TrajectoriesService,
    private readonly blobs: BlobStore,
  ) {}

  /** Keeps the trajectories and stores their metrics, prefixed `{split}/`, on the model's current checkpoint. */
  async log(request: LogTrajectoriesRequest): Promise<LogTrajectoriesReply> {
    const model = await this.models.getOwned(request.entity_id, request.model_id);
    const groups = await this.blobs.takeJson(request.trajectory_groups);
    const metrics = prefixMetrics(request.split, computeTrajectoryMetrics(groups));
    const current = await this.checkpoints.latest(model.id);
    if (!current) throw ServiceError.conflict(`Model ${model.id} has no checkpoint to log metrics against`);
    await this.trajectories.keepLogged(current, request.split, groups, metrics);
    return { model_id: model.id, step: current.step, split: request.split, metrics };
  }
}
