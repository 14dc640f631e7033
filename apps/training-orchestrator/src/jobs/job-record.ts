import type { TrainingEventRecord, TrainingEventType, TrainingJobRecord } from '@trainyard/contracts';
import type { EventRow, JobRow } from './training-job.repository';

export function toJobRecord(row: Omit<JobRow, 'payload'>): TrainingJobRecord {
  return {
    id: row.id,
    object: 'training_job',
    type: row.type,
    model_id: row.modelId,
    status: row.status,
    created_at: row.createdAt.toISOString(),
    training_start: row.trainingStart?.toISOString() ?? null,
    training_end: row.trainingEnd?.toISOString() ?? null,
    error_message: row.errorMessage,
    checkpoint_step: row.checkpointStep,
    ignored_config_keys: row.ignoredConfigKeys ?? [],
    attempts: row.attempts,
    no_gradient_steps_reason: row.noStepsReason ?? null,
  };
}

export function toEventRecord(row: EventRow): TrainingEventRecord {
  return {
    id: row.id,
    type: row.type as TrainingEventType,
    data: (row.data ?? {}) as Record<string, unknown>,
    created_at: row.createdAt.toISOString(),
  };
}
