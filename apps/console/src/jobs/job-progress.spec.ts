import type { TrainingEventRecord, TrainingJobRecord } from '@trainyard/contracts';
import { applyEvent, JobProgress, newerJob, NO_PROGRESS, percentDone, seriesOf } from './job-progress';

let next = 0;
const event = (type: TrainingEventRecord['type'], data: Record<string, unknown> = {}): TrainingEventRecord => ({
  id: `e${++next}`,
  type,
  data,
  created_at: '2026-01-01T00:00:00.000Z',
});

const replay = (events: TrainingEventRecord[], from: JobProgress = NO_PROGRESS) => events.reduce(applyEvent, from);

describe('job progress from events', () => {
  it('counts gradient steps against num_sequences and keeps their metrics', () => {
    const progress = replay([
      event('training_started', { num_sequences: 4 }),
      event('gradient_step', { loss: 0.5, reward: 1, grad_norm: 2, learning_rate: 1e-3 }),
      event('gradient_step', { loss: 0.25, reward: 2, grad_norm: 1, learning_rate: 1e-3 }),
    ]);
    expect(progress.numSequences).toBe(4);
    expect(percentDone(progress)).toBe(50);
    expect(seriesOf(progress.points, 'loss')).toEqual([
      { step: 1, value: 0.5 },
      { step: 2, value: 0.25 },
    ]);
    expect(progress.finished).toBeNull();
  });

  it('keeps the reason a job gives for making no gradient step', () => {
    const progress = replay([event('training_started', { num_sequences: 0, no_gradient_steps_reason: 'Every group had equal rewards' }), event('training_ended')]);
    expect(progress.noStepsReason).toBe('Every group had equal rewards');
    expect(percentDone(progress)).toBe(100);
    expect(replay([event('training_started', { num_sequences: 2 })]).noStepsReason).toBeNull();
  });

  it('is unchanged by an event seen twice, as a resumed stream may send it', () => {
    const step = event('gradient_step', { loss: 1 });
    const once = replay([event('training_started', { num_sequences: 2 }), step]);
    expect(replay([step], once)).toBe(once);
    expect(once.points).toHaveLength(1);
  });

  it('leaves out steps without a metric instead of drawing zero', () => {
    const progress = replay([event('gradient_step', { loss: 1 }), event('gradient_step', { loss: 2, reward: 3 })]);
    expect(seriesOf(progress.points, 'reward')).toEqual([{ step: 2, value: 3 }]);
  });

  it('knows nothing of progress before training starts, and shows a failure with its message', () => {
    expect(percentDone(NO_PROGRESS)).toBeNull();
    const failed = replay([event('training_started', { num_sequences: 3 }), event('training_failed', { error_message: 'out of memory' })]);
    expect(failed).toMatchObject({ finished: 'failed', errorMessage: 'out of memory' });
    expect(replay([event('training_ended')]).finished).toBe('ended');
  });
});

describe('the newer of two reads of a job', () => {
  const read = (status: TrainingJobRecord['status']) => ({ id: 'job', status }) as TrainingJobRecord;

  it('keeps a final status when a read from before it arrives late', () => {
    const cancelled = read('cancelled');
    expect(newerJob(cancelled, read('running'))).toBe(cancelled);
    expect(newerJob(read('running'), read('queued')).status).toBe('running');
  });

  it('takes a read that moves the job forward, or the first read, or a fresher one of the same status', () => {
    expect(newerJob(undefined, read('queued')).status).toBe('queued');
    expect(newerJob(read('running'), read('cancelled')).status).toBe('cancelled');
    const fresher = read('running');
    expect(newerJob(read('running'), fresher)).toBe(fresher);
  });
});
