import { Injectable } from '@nestjs/common';
import { CheckpointRecord, RecordCheckpointRequest, ServiceError } from '@trainyard/contracts';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '@trainyard/engine/files';
import { BlobStore } from '@trainyard/messaging';
import { AdapterFiles } from '../artifacts/adapter-files';
import { ModelsService } from '../models/models.service';
import { toCheckpointRecord } from './checkpoint-record';
import { CheckpointRepository } from './checkpoint.repository';

const ADAPTER_FILES = new Set([ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]);

/**
 * Records the checkpoint a training job produced: the adapter files (parked as blobs by the
 * worker) are written atomically, then the row at the next step. Exactly once per job: the
 * checkpoint's id is the job's, so a worker that retries (or restarts after a crash) gets the
 * first record back and nothing is written twice.
 */
@Injectable()
export class CheckpointRecorderService {
  constructor(
    private readonly models: ModelsService,
    private readonly checkpoints: CheckpointRepository,
    private readonly adapters: AdapterFiles,
    private readonly blobs: BlobStore,
  ) {}

  async record(request: RecordCheckpointRequest): Promise<CheckpointRecord> {
    const model = await this.models.getOwned(request.entity_id, request.model_id);
    const existing = await this.checkpoints.findInModel(model.id, request.job_id);
    if (existing) {
      await Promise.all(request.files.map((f) => this.blobs.take(f.content).catch(() => undefined)));
      return toCheckpointRecord(existing);
    }
    const names = request.files.map((f) => f.name);
    if (!names.includes(ADAPTER_WEIGHTS_FILE) || !names.every((n) => ADAPTER_FILES.has(n))) {
      throw ServiceError.invalid(`An adapter is ${[...ADAPTER_FILES].join(' and ')}; got ${names.join(', ')}`);
    }
    const files = [];
    for (const file of request.files) files.push({ name: file.name, data: await this.blobs.take(file.content) });
    const adapter = await this.adapters.writeTrained(model.id, request.job_id, files);
    return toCheckpointRecord(await this.checkpoints.createNext(model.id, request.job_id, adapter, request.metrics));
  }
}
