import {
  FineTuningHyperparameters,
  JobCheckpointRecord,
  servingName,
  TrainingEventRecord,
  TrainingJobRecord,
  TrainingJobStatus,
} from '@trainyard/contracts';
import { toFineTuningId } from './fine-tuning-ids';

/** OpenAI's `fine_tuning.job` object, as the openai SDKs type it. */
export interface OpenAiFineTuningJob {
  id: string;
  object: 'fine_tuning.job';
  /** Unix seconds, as every time here. */
  created_at: number;
  finished_at: number | null;
  error: { code: string; message: string; param: string | null } | null;
  fine_tuned_model: string | null;
  hyperparameters: FineTuningHyperparameters;
  method: { type: 'supervised'; supervised: { hyperparameters: FineTuningHyperparameters } };
  model: string;
  organization_id: string;
  result_files: string[];
  seed: number;
  status: 'validating_files' | TrainingJobStatus;
  trained_tokens: number | null;
  training_file: string;
  validation_file: string | null;
  estimated_finish: number | null;
  integrations: null;
  metadata: Record<string, string> | null;
  user_provided_suffix: string | null;
}

export interface OpenAiFineTuningEvent {
  id: string;
  object: 'fine_tuning.job.event';
  created_at: number;
  level: 'info' | 'warn' | 'error';
  message: string;
  type: 'message' | 'metrics';
  data: Record<string, unknown>;
}

export interface OpenAiFineTuningCheckpoint {
  id: string;
  object: 'fine_tuning.job.checkpoint';
  created_at: number;
  fine_tuned_model_checkpoint: string;
  fine_tuning_job_id: string;
  step_number: number;
  metrics: Partial<Record<'step' | 'train_loss' | 'valid_loss' | 'full_valid_loss', number>>;
}

/** OpenAI's list envelope: `after` is the last id of a page, `has_more` says whether to ask. */
export interface OpenAiPage<T> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** A job created through /v1/fine_tuning/jobs in OpenAI's shape; its fine-tuned model is the checkpoint it made. `now`: Unix ms. */
export function toOpenAiJob(job: TrainingJobRecord & { fine_tuning: NonNullable<TrainingJobRecord['fine_tuning']> }, now = Date.now()): OpenAiFineTuningJob {
  const ft = job.fine_tuning;
  const finished = job.status === 'succeeded' || job.status === 'failed' || job.status === 'cancelled';
  return {
    id: toFineTuningId('ftjob', job.id),
    object: 'fine_tuning.job',
    created_at: seconds(job.created_at),
    finished_at: finished && job.training_end ? seconds(job.training_end) : null,
    error: job.status === 'failed' ? { code: 'training_failed', message: job.error_message ?? 'The training job failed', param: null } : null,
    fine_tuned_model: job.status === 'succeeded' && job.checkpoint_step !== null ? servingName(ft.model, job.checkpoint_step) : null,
    hyperparameters: ft.hyperparameters,
    method: { type: 'supervised', supervised: { hyperparameters: ft.hyperparameters } },
    model: ft.base_model,
    organization_id: ft.model.entity,
    result_files: [],
    seed: ft.seed,
    status: job.status,
    trained_tokens: job.status === 'succeeded' ? job.trained_tokens : null,
    training_file: ft.training_file,
    validation_file: ft.validation_file,
    estimated_finish: estimatedFinish(job, now),
    integrations: null,
    metadata: ft.metadata,
    user_provided_suffix: ft.suffix,
  };
}

/**
 * When a running job should end, at the pace of its steps so far (time since it started,
 * model loading included, per step reported); null before its first step and when not running.
 */
export function estimatedFinish(job: Pick<TrainingJobRecord, 'status' | 'training_start' | 'progress'>, now: number): number | null {
  const progress = job.progress;
  if (job.status !== 'running' || !progress || !job.training_start || progress.steps_done <= 0 || progress.steps_done >= progress.num_steps) return null;
  const perStep = (now - Date.parse(job.training_start)) / progress.steps_done;
  return Math.floor((now + perStep * (progress.num_steps - progress.steps_done)) / 1000);
}

/**
 * One of the job's events as OpenAI words them: a gradient step is a `metrics` event (with
 * OpenAI's train_loss and valid_loss beside our own metrics), the rest `message` events.
 */
export function toOpenAiEvent(event: TrainingEventRecord, job: OpenAiFineTuningJob): OpenAiFineTuningEvent {
  const common = { id: toFineTuningId('ftevent', event.id), object: 'fine_tuning.job.event' as const, created_at: seconds(event.created_at) };
  const data = event.data;
  switch (event.type) {
    case 'training_started':
      return { ...common, level: 'info', type: 'message', message: `Fine-tuning job started: ${String(data['num_sequences'])} training steps`, data };
    case 'gradient_step': {
      const losses = stepLosses(data);
      const shown = [`training loss=${format(losses.train_loss)}`, ...(losses.valid_loss === undefined ? [] : [`validation loss=${format(losses.valid_loss)}`])];
      return { ...common, level: 'info', type: 'metrics', message: `Step ${event.step ?? '?'}: ${shown.join(', ')}`, data: { step: event.step, ...losses, ...data } };
    }
    case 'training_ended':
      return { ...common, level: 'info', type: 'message', message: `The job has successfully completed: new fine-tuned model ${job.fine_tuned_model ?? ''}`.trim(), data: { fine_tuned_model: job.fine_tuned_model } };
    case 'training_failed': {
      const message = typeof data['error_message'] === 'string' ? data['error_message'] : 'The job failed';
      return { ...common, level: job.status === 'cancelled' ? 'info' : 'error', type: 'message', message, data };
    }
  }
}

/** The checkpoint a job made, in OpenAI's shape: its step is the job's gradient step count. */
export function toOpenAiCheckpoint(checkpoint: JobCheckpointRecord): OpenAiFineTuningCheckpoint {
  return {
    id: toFineTuningId('ftckpt', checkpoint.id),
    object: 'fine_tuning.job.checkpoint',
    created_at: seconds(checkpoint.created_at),
    fine_tuned_model_checkpoint: checkpoint.model_name,
    fine_tuning_job_id: toFineTuningId('ftjob', checkpoint.job_id),
    step_number: checkpoint.num_gradient_steps,
    metrics: { step: checkpoint.num_gradient_steps, ...stepLosses(checkpoint.last_step_metrics) },
  };
}

/** OpenAI's names for a step's losses: our validation loss is over the whole validation file, hence full_valid_loss too. */
function stepLosses(metrics: Record<string, unknown>): OpenAiFineTuningCheckpoint['metrics'] {
  const number = (key: string) => (typeof metrics[key] === 'number' ? (metrics[key] as number) : undefined);
  const train = number('loss');
  const valid = number('valid_loss');
  return { ...(train === undefined ? {} : { train_loss: train }), ...(valid === undefined ? {} : { valid_loss: valid, full_valid_loss: valid }) };
}

export function openAiPage<T extends { id: string }>(data: T[], hasMore: boolean): OpenAiPage<T> {
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}

function seconds(iso: string): number {
  return Math.floor(Date.parse(iso) / 1000);
}

function format(value: number | undefined): string {
  return value === undefined ? 'n/a' : value.toFixed(4);
}
