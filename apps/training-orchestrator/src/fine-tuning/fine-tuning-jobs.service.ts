import { Injectable, Logger } from '@nestjs/common';
import {
  BaseModelInfo,
  CallerScope,
  CreateFineTuningJobRequest,
  FineTuningDetails,
  ModelRecord,
  ServiceError,
  servingName,
  SftJobPayload,
  Subjects,
  TrainingConversation,
  TrainingJobRecord,
} from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { randomInt, randomUUID } from 'node:crypto';
import { sftConversations } from '../data/sft-data';
import { TrainingDataSource } from '../data/training-data.source';
import { toJobRecord } from '../jobs/job-record';
import { TrainingJobsService } from '../jobs/training-jobs.service';
import { resolveHyperparameters, sftSettings } from './hyperparameters';

/** The project of the models fine-tuning jobs make: `wandb-artifact:///{entity}/fine-tuning/{suffix}-{job}`. */
export const FINE_TUNING_PROJECT = 'fine-tuning';

/** The trainable model a fine-tuning job makes, named after the job so that the two are found from each other. */
export function fineTuningModelName(suffix: string | null, jobId: string): string {
  return `${suffix ?? 'ft'}-${jobId.replaceAll('-', '')}`;
}

/**
 * Jobs of OpenAI's fine-tuning API, as our SFT jobs: each on a new trainable model of the
 * requested base model, so that the job's one checkpoint is the fine-tuned model. Everything
 * is checked (base model, files, every line of them) before the model and the job are made.
 */
@Injectable()
export class FineTuningJobsService {
  private readonly logger = new Logger(FineTuningJobsService.name);

  constructor(
    private readonly jobs: TrainingJobsService,
    private readonly rpc: RpcClient,
    private readonly data: TrainingDataSource,
  ) {}

  async create(request: CreateFineTuningJobRequest): Promise<TrainingJobRecord> {
    const scope: CallerScope = { entity_id: request.entity_id, entity_name: request.entity_name };
    const base = await this.baseModel(request.model);
    const training = await this.conversations(scope, request.training_file, 'training_file');
    const validation = request.validation_file === null ? null : await this.conversations(scope, request.validation_file, 'validation_file');
    const hyperparameters = resolveHyperparameters(request.hyperparameters, training.length);
    const seed = request.seed ?? randomInt(2 ** 31 - 1);
    const jobId = randomUUID();
    const model = await this.rpc.request(Subjects.registry.createModel, {
      ...scope,
      entity: null,
      project: FINE_TUNING_PROJECT,
      name: fineTuningModelName(request.suffix, jobId),
      base_model: base.id,
      return_existing: false,
    });
    const fineTuning: FineTuningDetails = {
      base_model: base.id,
      training_file: request.training_file,
      validation_file: request.validation_file,
      suffix: request.suffix,
      seed,
      metadata: request.metadata && Object.keys(request.metadata).length > 0 ? request.metadata : null,
      hyperparameters,
      model: { entity: model.entity, project: model.project, name: model.name },
    };
    const payload: SftJobPayload = {
      version: 2,
      type: 'sft',
      model_name: servingName(model),
      entity_name: request.entity_name,
      conversations: training,
      settings: sftSettings(hyperparameters),
      epochs: hyperparameters.n_epochs,
      shuffle_seed: seed,
      ...(validation ? { validation_conversations: validation } : {}),
    };
    try {
      return toJobRecord(await this.jobs.accept(scope, model, { id: jobId, payload, experimentalConfig: null, ignoredConfigKeys: [], fineTuning }));
    } catch (err) {
      await this.discard(scope, model);
      throw err;
    }
  }

  /** A base model this deployment serves and can train; a trained model's name is refused, naming what is. */
  private async baseModel(id: string): Promise<BaseModelInfo> {
    const { base_models } = await this.rpc.request(Subjects.registry.listBaseModels, {});
    const base = base_models.find((m) => m.id === id);
    if (!base) {
      const available = base_models.filter((m) => !m.unsupported).map((m) => m.id);
      throw ServiceError.invalid(
        `model ${JSON.stringify(id.length > 200 ? `${id.slice(0, 200)}...` : id)} is not a base model of this deployment; fine-tuning starts from one of: ${available.join(', ') || 'none'}`,
        'model',
      );
    }
    if (base.unsupported) throw ServiceError.invalid(`model ${base.id} cannot be trained by this engine: ${base.unsupported}`, 'model');
    return base;
  }

  private async conversations(scope: CallerScope, fileId: string, field: string): Promise<TrainingConversation[]> {
    return sftConversations(await this.data.readUploadedFile(scope, fileId, field), field, '');
  }

  /** The job could not be stored: its model would serve nothing, so it goes too. */
  private async discard(scope: CallerScope, model: ModelRecord): Promise<void> {
    await this.rpc
      .request(Subjects.registry.deleteModel, { ...scope, model_id: model.id })
      .catch((err: Error) => this.logger.warn(`model ${model.id} of a fine-tuning job that was not stored is left behind: ${err.message}`));
  }
}
