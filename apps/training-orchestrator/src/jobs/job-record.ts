import type { FineTuningDetails, JobStepProgress, TrainingEventRecord, TrainingEventType, TrainingJobRecord } from '@trainyard/contracts';
import type { EventRow, JobRow } from './training-job.repository';

/** `progress`: how far a running job got, when it was looked up. */
export function toJobRecord(row: Omit<JobRow, 'payload'>, progress: JobStepProgress | null = null): TrainingJobRecord {
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
    trained_tokens: row.trainedTokens ?? null,
    // Only the fine-tuning service writes the column, always from a FineTuningDetails.
    fine_tuning: (row.fineTuning ?? null) as FineTuningDetails | null,
    progress: row.status === 'running' ? progress : null,
  };
}

export function toEventRecord(row: EventRow): TrainingEventRecord {
  const step = gradientStepNumber(row);
  return {
    id: row.id,
    type: row.type as TrainingEventType,
    data: (row.data ?? {}) as Record<string, unknown>,
    created_at: row.createdAt.toISOString(),
    ...(step !== null ? { step } : {}),
  };
}

/** A gradient_step event is stored once per step under the dedupe key `step:<n>`. */
export function gradientStepNumber(row: Pick<EventRow, 'type' | 'dedupeKey'>): number | null {
  const match = row.type === 'gradient_step' ? /^step:(\d+)$/.exec(row.dedupeKey ?? '') : null;
  return match ? Number(match[1]) : null;
}
