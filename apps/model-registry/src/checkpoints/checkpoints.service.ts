import { Injectable, Logger } from '@nestjs/common';
import {
  CheckpointRecord,
  DeleteCheckpointsReply,
  DeleteCheckpointsRequest,
  ListCheckpointsRequest,
  Page,
  ServiceError,
} from '@trainyard/contracts';
import { AdapterFiles } from '../artifacts/adapter-files';
import { ModelsService } from '../models/models.service';
import { toCheckpointRecord } from './checkpoint-record';
import { CheckpointRepository } from './checkpoint.repository';

@Injectable()
export class CheckpointsService {
  private readonly logger = new Logger(CheckpointsService.name);

  constructor(
    private readonly models: ModelsService,
    private readonly checkpoints: CheckpointRepository,
    private readonly adapters: AdapterFiles,
  ) {}

  async list(request: ListCheckpointsRequest): Promise<Page<CheckpointRecord>> {
    const model = await this.models.getOwned(request.entity_id, request.model_id);
    let afterStep: number | undefined;
    if (request.after !== undefined) {
      const after = await this.checkpoints.findInModel(model.id, request.after);
      if (!after) {
        throw ServiceError.invalid(`after: ${request.after} is not a checkpoint of model ${model.id}`, 'after');
      }
      afterStep = after.step;
    }
    const rows = await this.checkpoints.page(model.id, request.order, request.limit, afterStep);
    const data = rows.slice(0, request.limit).map(toCheckpointRecord);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: rows.length > request.limit,
    };
  }

  /** Idempotent: steps already gone are reported in not_found_steps, not as an error. */
  async delete(request: DeleteCheckpointsRequest): Promise<DeleteCheckpointsReply> {
    const model = await this.models.getOwned(request.entity_id, request.model_id);
    const outcome = await this.checkpoints.deleteSteps(model.id, request.steps);
    if (outcome.kind === 'would-empty') {
      throw ServiceError.conflict(
        `Cannot delete step(s) ${outcome.keptNone.join(', ')} of model ${model.id}: they are its only remaining ` +
          'checkpoints, and a model needs at least one to serve and train from. Delete the model instead.',
      );
    }
    // Files after rows: a failure here leaves unreferenced files (swept at start), never a dangling row.
    for (const row of outcome.deleted) {
      await this.adapters.remove(row.adapterPath).catch((err: Error) =>
        this.logger.warn(`Could not remove adapter ${row.adapterPath}: ${err.message}`),
      );
    }
    return { deleted_count: outcome.deleted.length, not_found_steps: outcome.notFoundSteps };
  }
}
