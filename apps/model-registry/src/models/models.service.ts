import { Injectable } from '@nestjs/common';
import {
  CreateModelRequest,
  DeleteModelReply,
  ErrorCode,
  ListModelsReply,
  ModelRecord,
  ServiceError,
} from '@trainyard/contracts';
import { randomUUID } from 'node:crypto';
import { AdapterFiles } from '../artifacts/adapter-files';
import { BaseModelsService } from '../base-models/base-models.service';
import { isUniqueViolation } from '../common/ids';
import { toModelRecord } from './model-record';
import { ModelRepository, ModelRow } from './model.repository';

@Injectable()
export class ModelsService {
  constructor(
    private readonly models: ModelRepository,
    private readonly baseModels: BaseModelsService,
    private readonly adapters: AdapterFiles,
  ) {}

  /** A model of the caller's entity, or not_found: another entity's model does not exist for them. */
  async getOwned(entityId: string, modelId: string): Promise<ModelRow> {
    const model = await this.models.findOwned(entityId, modelId);
    if (!model) throw ServiceError.notFound(`Model ${modelId} not found`);
    return model;
  }

  async list(entityId: string): Promise<ListModelsReply> {
    const [base, models] = await Promise.all([this.baseModels.list(), this.models.listForEntity(entityId)]);
    return {
      base_models: base.map(({ id, architecture, created, unsupported }) => ({ id, architecture, created, unsupported })),
      models: models.map(toModelRecord),
    };
  }

  /**
   * Get-or-create. The adapter files are written first and the rows after, in one
   * statement: a crash in between leaves only unreferenced files (swept at start), never
   * a checkpoint without its adapter.
   */
  async create(request: CreateModelRequest): Promise<ModelRecord> {
    if (request.entity !== null && request.entity !== request.entity_name) {
      throw new ServiceError(
        ErrorCode.Forbidden,
        `This API key belongs to entity "${request.entity_name}" and cannot create models in entity "${request.entity}"`,
        { param: 'entity' },
      );
    }
    const existing = await this.existing(request);
    if (existing) return existing;

    const base = await this.baseModels.find(request.base_model);
    if (!base) {
      const available = (await this.baseModels.list()).map((m) => m.id);
      throw ServiceError.invalid(
        `Unknown base model "${request.base_model}"; this deployment has: ${available.join(', ') || 'none'}`,
        'base_model',
      );
    }
    const modelId = randomUUID();
    const checkpointId = randomUUID();
    const adapter = await this.adapters.writeInitial(modelId, base);
    try {
      const model = await this.models.createWithFirstCheckpoint(
        { id: modelId, entityId: request.entity_id, project: request.project, name: request.name, baseModel: base.id },
        { id: checkpointId, ...adapter },
        () => this.adapters.assertStored(adapter),
      );
      return toModelRecord(model);
    } catch (err) {
      // The initial adapter's objects stay for the sweep: another model may share them.
      // A concurrent create of the same name won the race: answer as if it had come first.
      if (isUniqueViolation(err)) {
        const winner = await this.existing(request);
        if (winner) return winner;
      }
      throw err;
    }
  }

  async delete(entityId: string, modelId: string): Promise<DeleteModelReply> {
    const model = await this.getOwned(entityId, modelId);
    const deleted = await this.models.delete(model.id);
    if (!deleted) throw ServiceError.notFound(`Model ${modelId} not found`);
    // After the rows: a crash here leaves legacy files without rows (swept), never rows without
    // files. Objects in the artifact store go with the sweep once no row refers to them.
    await this.adapters.removeAllOf(model.id);
    return { model_id: model.id, deleted_checkpoints: deleted.deletedCheckpoints, deleted_run: model.runId !== null };
  }

  private async existing(request: CreateModelRequest): Promise<ModelRecord | undefined> {
    const found = await this.models.findByName(request.entity_id, request.project, request.name);
    if (!found) return undefined;
    const fullName = `${found.entityName}/${found.project}/${found.name}`;
    if (!request.return_existing) {
      throw ServiceError.conflict(
        `Model "${fullName}" already exists (id ${found.id}); send return_existing: true to get it instead`,
      );
    }
    if (found.baseModel !== request.base_model) {
      throw ServiceError.conflict(
        `Model "${fullName}" already exists with base model "${found.baseModel}", not "${request.base_model}"`,
      );
    }
    return toModelRecord(found);
  }
}
