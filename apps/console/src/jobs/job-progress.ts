import type { TrainingEventRecord, TrainingJobRecord, TrainingJobStatus } from '@trainyard/contracts';

/** The gradient-step metrics the job page charts, in this order. */
export const CHARTED_METRICS = ['loss', 'reward', 'grad_norm', 'learning_rate'] as const;
export type ChartedMetric = (typeof CHARTED_METRICS)[number];

/** One gradient step: its 1-based number and its numeric metrics. */
export type StepPoint = { step: number } & Partial<Record<string, number>>;

/** What a job's events say so far. */
export interface JobProgress {
  /** Ids already applied: an event seen twice (a resumed stream) changes nothing. */
  seen: ReadonlySet<string>;
  /** From training_started: how many gradient steps will follow. */
  numSequences: number | null;
  points: StepPoint[];
  finished: 'ended' | 'failed' | null;
  errorMessage: string | null;
  /** From training_started: why the job will make no gradient step, when it will make none. */
  noStepsReason: string | null;
}

export const NO_PROGRESS: JobProgress = { seen: new Set(), numSequences: null, points: [], finished: null, errorMessage: null, noStepsReason: null };

export function applyEvent(progress: JobProgress, event: TrainingEventRecord): JobProgress {
  if (progress.seen.has(event.id)) return progress;
  const next = { ...progress, seen: new Set(progress.seen).add(event.id) };
  switch (event.type) {
    case 'training_started': {
      const n = event.data['num_sequences'];
      const reason = event.data['no_gradient_steps_reason'];
      return {
        ...next,
        numSequences: typeof n === 'number' ? n : next.numSequences,
        noStepsReason: typeof reason === 'string' ? reason : next.noStepsReason,
      };
    }
    case 'gradient_step':
      return { ...next, points: [...progress.points, { ...numericFields(event.data), step: progress.points.length + 1 }] };
    case 'training_ended':
      return { ...next, finished: 'ended' };
    case 'training_failed': {
      const message = event.data['error_message'];
      return { ...next, finished: 'failed', errorMessage: typeof message === 'string' ? message : null };
    }
    default:
      return next;
  }
}

/** Steps done against num_sequences, 0..100; null before training starts. */
export function percentDone(progress: JobProgress): number | null {
  if (progress.numSequences === null) return null;
  if (progress.numSequences === 0) return 100;
  return Math.min(100, (100 * progress.points.length) / progress.numSequences);
}

/** The points of one metric: steps that lack it are left out rather than drawn as zero. */
export function seriesOf(points: StepPoint[], metric: ChartedMetric): { step: number; value: number }[] {
  return points.flatMap((p) => (typeof p[metric] === 'number' && Number.isFinite(p[metric]) ? [{ step: p.step, value: p[metric] as number }] : []));
}

const STATUS_ORDER: Record<TrainingJobStatus, number> = { queued: 0, running: 1, succeeded: 2, failed: 2, cancelled: 2 };

/**
 * The newer of two reads of one job. A job's status only moves forward (queued, running, then
 * one final status), so a read that lost a race with a later one, such as a cancel's reply
 * arriving after the refresh its final event triggered, is dropped rather than shown.
 */
export function newerJob(current: TrainingJobRecord | undefined, incoming: TrainingJobRecord): TrainingJobRecord {
  return current && STATUS_ORDER[current.status] > STATUS_ORDER[incoming.status] ? current : incoming;
}

function numericFields(data: Record<string, unknown>): Record<string, number> {
  return Object.fromEntries(Object.entries(data).filter((entry): entry is [string, number] => typeof entry[1] === 'number'));
}
