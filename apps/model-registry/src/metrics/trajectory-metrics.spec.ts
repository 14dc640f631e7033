import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { computeTrajectoryMetrics, prefixMetrics } from './trajectory-metrics';

function failure(groups: unknown): ServiceError {
  try {
    computeTrajectoryMetrics(groups);
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('expected a validation failure');
}

describe('computeTrajectoryMetrics', () => {
  it('averages rewards and custom metrics over every trajectory', () => {
    const metrics = computeTrajectoryMetrics([
      { trajectories: [{ reward: 1, metrics: { correct: true, turns: 3 } }, { reward: 0, metrics: { correct: false, turns: 5 } }] },
      { trajectories: [{ reward: 0.5, metrics: { turns: 1 } }], unknown_key: 'ignored' },
    ]);
    expect(metrics['reward']).toBeCloseTo(0.5);
    expect(metrics['correct']).toBeCloseTo(0.5);
    expect(metrics['turns']).toBeCloseTo(3);
  });

  it('takes reward_std_dev as the mean population std of groups larger than one', () => {
    const metrics = computeTrajectoryMetrics([
      { trajectories: [{ reward: 0 }, { reward: 2 }] }, // std 1
      { trajectories: [{ reward: 1 }, { reward: 1 }, { reward: 1 }, { reward: 1 }] }, // std 0
      { trajectories: [{ reward: 100 }] }, // size 1: not counted
    ]);
    expect(metrics['reward_std_dev']).toBeCloseTo(0.5);
  });

  it('counts the exceptions groups report against their trajectories', () => {
    const metrics = computeTrajectoryMetrics([
      { trajectories: [{ reward: 1 }, { reward: 1 }, { reward: 1 }], exceptions: [{ type: 'ValueError', message: 'x', traceback: '' }] },
    ]);
    expect(metrics['exception_rate']).toBeCloseTo(0.25);
  });

  it('gives a reward of 0 to trajectories that leave it out, as the client does', () => {
    expect(computeTrajectoryMetrics([{ trajectories: [{}, { reward: 1 }] }])['reward']).toBeCloseTo(0.5);
  });

  it('reports zeros, not NaN, for no trajectories at all', () => {
    expect(computeTrajectoryMetrics([])).toEqual({ exception_rate: 0, reward_std_dev: 0 });
  });

  it('names every bad value with its location', () => {
    const error = failure([
      { trajectories: [{ reward: 'high' }, { reward: 1, metrics: { score: 'good' } }] },
      { no_trajectories: [] },
    ]);
    expect(error.code).toBe(ErrorCode.ValidationFailed);
    expect(error.details.issues?.map((i) => i.loc)).toEqual([
      ['body', 'trajectory_groups', 0, 'trajectories', 0, 'reward'],
      ['body', 'trajectory_groups', 0, 'trajectories', 1, 'metrics', 'score'],
      ['body', 'trajectory_groups', 1, 'trajectories'],
    ]);
    expect(error.message).toContain('must be a finite number, got "high"');
  });

  it('refuses metric names PostgreSQL cannot store (NUL, half a surrogate pair)', () => {
    const error = failure([{ trajectories: [{ reward: 1, metrics: { 'a\u0000b': 1, '\ud800': 2, 'fine 😀': 3 } }] }]);
    expect(error.details.issues?.map((i) => i.loc.at(-1))).toEqual(['a\u0000b', '\ud800']);
  });

    it('prefixes every metric with its split', () => {
    expect(prefixMetrics('val', { reward: 1, exception_rate: 0 })).toEqual({ 'val/reward': 1, 'val/exception_rate': 0 });
  });
});
