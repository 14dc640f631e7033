import type { BaseModelInfo } from './base-models.messages';

/** Who is asking: every registry request carries it, and the registry enforces ownership with it. */
export interface CallerScope {
  entity_id: string;
  /** The entity's name, as it appears in model names (`wandb-artifact:///{entity}/...`). */
  entity_name: string;
}

/** A trainable model as POST /v1/preview/models answers it. */
export interface ModelRecord {
  id: string;
  entity: string;
  project: string;
  name: string;
  base_model: string;
  run_id: string | null;
  /** Unix seconds. */
  created: number;
}

export interface CreateModelRequest extends CallerScope {
  /** The entity to create in; null means the caller's own. */
  entity: string | null;
  project: string;
  name: string;
  base_model: string;
  return_existing: boolean;
}

export interface DeleteModelRequest extends CallerScope {
  model_id: string;
}

export interface DeleteModelReply {
  model_id: string;
  deleted_checkpoints: number;
  deleted_run: boolean;
}

export type ListModelsRequest = CallerScope;

/** Everything GET /v1/models lists: the deployment's base models and the caller's trainable models. */
export interface ListModelsReply {
  base_models: BaseModelInfo[];
  models: ModelRecord[];
}
