import { Injectable } from '@nestjs/common';
import {
  ListTinkerTrainingRunsRequest,
  ServiceError,
  TinkerCheckpointRecord,
  TinkerCheckpointsReply,
  TinkerTrainingRunRecord,
  TinkerTrainingRunRequest,
  TinkerTrainingRunsReply,
} from '@trainyard/contracts';
import { ClientRow, TinkerRepository } from './tinker.repository';

/**
 * The Tinker REST client's listings: each training client is a training run, and what it saved
 * (sampler weights and states) its checkpoints, per entity. A checkpoint's id is its path
 * after the run id (`sampler_weights/<name>`, `weights/<name>`), as the SDK parses it.
 */
@Injectable()
export class TinkerRunsService {
  constructor(private readonly repo: TinkerRepository) {}

  async list(request: ListTinkerTrainingRunsRequest): Promise<TinkerTrainingRunsReply> {
    const { rows, total } = await this.repo.listClients(request.entity_id, request.limit, request.offset);
    const lastCalls = await this.repo.lastRequestTimes(rows.map((r) => r.id));
    const runs = await Promise.all(rows.map((client) => this.record(client, lastCalls.get(client.id) ?? client.createdAt)));
    return { training_runs: runs, cursor: { offset: request.offset, limit: request.limit, total_count: total } };
  }

  async get(request: TinkerTrainingRunRequest): Promise<TinkerTrainingRunRecord> {
    const client = await this.owned(request);
    const lastCalls = await this.repo.lastRequestTimes([client.id]);
    return this.record(client, lastCalls.get(client.id) ?? new Date());
  }

  async checkpoints(request: TinkerTrainingRunRequest): Promise<TinkerCheckpointsReply> {
    const client = await this.owned(request);
    return { checkpoints: await this.checkpointsOf(client) };
  }

  private async record(client: ClientRow, lastRequest: Date): Promise<TinkerTrainingRunRecord> {
    const checkpoints = await this.checkpointsOf(client);
    const last = (type: TinkerCheckpointRecord['checkpoint_type']) => checkpoints.filter((c) => c.checkpoint_type === type).at(-1) ?? null;
    return {
      training_run_id: client.id,
      base_model: client.baseModel,
      model_owner: client.entityName,
      is_lora: true,
      corrupted: client.lostReason !== null,
      lora_rank: client.loraConfig.rank,
      last_request_time: lastRequest.toISOString(),
      last_checkpoint: last('training'),
      last_sampler_checkpoint: last('sampler'),
    };
  }

  /** Oldest first. */
  private async checkpointsOf(client: ClientRow): Promise<TinkerCheckpointRecord[]> {
    const saved = await this.repo.savedBy(client.entityId, client.id);
    const idOf = (path: string) => path.slice(`tinker://${client.id}/`.length);
    return [
      ...saved.sampler.map((s) => ({ checkpoint_id: idOf(s.path), checkpoint_type: 'sampler' as const, time: s.at.toISOString(), tinker_path: s.path, size_bytes: null, at: s.at })),
      ...saved.states.map((s) => ({ checkpoint_id: idOf(s.path), checkpoint_type: 'training' as const, time: s.at.toISOString(), tinker_path: s.path, size_bytes: s.bytes, at: s.at })),
    ]
      .sort((a, b) => a.at.getTime() - b.at.getTime())
      .map(({ at: _at, ...checkpoint }) => checkpoint);
  }

  private async owned(request: TinkerTrainingRunRequest): Promise<ClientRow> {
    const client = await this.repo.findClient(request.entity_id, request.training_run_id);
    if (!client) throw ServiceError.notFound(`Training run ${request.training_run_id} not found`);
    return client;
  }
}
