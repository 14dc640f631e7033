import type { CallerScope } from '../registry/models.messages';
import type { ServingNameParts } from '../registry/serving-name';

/** A supervised hyperparameter as a fine-tuning request gives it: a value, or "auto" (the service picks). */
export type AutoOr<T> = T | 'auto';

/** method.supervised.hyperparameters (or the legacy top-level hyperparameters) of POST /v1/fine_tuning/jobs. */
export interface FineTuningHyperparametersInput {
  n_epochs?: AutoOr<number>;
  batch_size?: AutoOr<number>;
  learning_rate_multiplier?: AutoOr<number>;
}

/** The hyperparameters a fine-tuning job runs with, every "auto" resolved against its training file. */
export interface FineTuningHyperparameters {
  n_epochs: number;
  batch_size: number;
  learning_rate_multiplier: number;
}

/**
 * POST /v1/fine_tuning/jobs, its shape checked by the gateway: an SFT job on a new trainable
 * model of `model`, trained on an uploaded file in OpenAI's chat JSONL format.
 */
export interface CreateFineTuningJobRequest extends CallerScope {
  /** A base model id of this deployment. */
  model: string;
  /** `file-...` from POST /v1/files, purpose fine-tune. */
  training_file: string;
  validation_file: string | null;
  /** Letters, digits, ".", "_" and "-"; part of the new model's name. */
  suffix: string | null;
  /** Orders each epoch's examples; one is drawn when null. */
  seed: number | null;
  metadata: Record<string, string> | null;
  hyperparameters: FineTuningHyperparametersInput;
}

/**
 * What a job created through /v1/fine_tuning/jobs carries beside the training job (stored
 * with it; null on the preview API's jobs): the request, resolved.
 */
export interface FineTuningDetails {
  base_model: string;
  training_file: string;
  validation_file: string | null;
  suffix: string | null;
  seed: number;
  /** null when the request had none (or an empty object). */
  metadata: Record<string, string> | null;
  hyperparameters: FineTuningHyperparameters;
  /** The trainable model made for the job: its checkpoint is served as `servingName(model, checkpoint_step)`. */
  model: ServingNameParts;
}

/** Only fine-tuning jobs with all these metadata pairs; null: only those without metadata. */
export type FineTuningMetadataFilter = Record<string, string> | null;

/** The checkpoint a training job produced (every finished job adds exactly one). */
export interface JobCheckpointRecord {
  /** The checkpoint's id, which is its job's id. */
  id: string;
  job_id: string;
  model_id: string;
  /** Its step in the model's line of checkpoints. */
  step: number;
  /** `wandb-artifact:///{entity}/{project}/{name}:step{N}`: the name chat completions and Responses serve it by. */
  model_name: string;
  /** Gradient steps the job made before it was written. */
  num_gradient_steps: number;
  /** The metrics of the job's last gradient step (loss, valid_loss when a validation file was given, ...). */
  last_step_metrics: Record<string, number>;
  /** ISO 8601. */
  created_at: string;
}

export interface ListJobCheckpointsRequest extends CallerScope {
  job_id: string;
  /** Only a job created through /v1/fine_tuning/jobs; any other is not found. */
  fine_tuning?: boolean;
  /** Id of the last checkpoint already seen. */
  after?: string;
  limit: number;
}
