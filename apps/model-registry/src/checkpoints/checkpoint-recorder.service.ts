import { Injectable } from '@nestjs/common';
import { CheckpointRecord, RecordCheckpointRequest } from '@trainyard/contracts';
import { AdapterFiles } from '../artifacts/adapter-files';
import { ModelsService } from '../models/models.service';
import { toCheckpointRecord } from './checkpoint-record';
import { CheckpointRepository } from './checkpoint.repository';

/**
 * Records the checkpoint a training job produced: the worker has stored the adapter in the
 * artifact store; the registry checks the bundle, then writes the row at the next step.
 * Exactly once per job: the checkpoint's id is the job's, so a worker that retries (or
 * restarts after a crash) gets the first record back.
 */
@Injectable()
export class CheckpointRecorderService {
  constructor(
    private readonly models: ModelsService,
    private readonly checkpoints: CheckpointRepository,
    private readonly adapters: AdapterFiles,
  ) {}

  async record(request: RecordCheckpointRequest): Promise<CheckpointRecord> {
    const model = await this.models.getOwned(request.entity_id, request.model_id);
    const existing = await this.checkpoints.findInModel(model.id, request.job_id);
    if (existing) return toCheckpointRecord(existing);
    const adapter = await this.adapters.checkTrained(request.adapter_bundle);
    const row = await this.checkpoints.createNext(model.id, request.job_id, adapter, request.metrics, () => this.adapters.assertStored(adapter));
    return toCheckpointRecord(row);
  }
}
