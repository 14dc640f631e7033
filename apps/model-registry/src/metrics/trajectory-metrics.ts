import { ServiceError, ValidationIssue } from '@trainyard/contracts';

/**
 * The metrics POST .../log stores, computed the way the ART client computes them locally:
 * `reward` and every key of `trajectory.metrics` averaged over all trajectories,
 * `exception_rate` over trajectories plus the exceptions their groups reported, and
 * `reward_std_dev` the mean, over groups of more than one trajectory, of the population
 * standard deviation of the group's rewards.
 *
 * Groups are read leniently (unknown keys are ignored, `reward` defaults to 0) but a value
 * that would poison an average is refused: rewards and metrics must be finite numbers
 * (booleans count as 0 and 1), and metric names text that PostgreSQL can store.
 */
export function computeTrajectoryMetrics(groups: unknown): Record<string, number> {
  const issues: ValidationIssue[] = [];
  const at = (...path: (string | number)[]) => ['body', 'trajectory_groups', ...path];
  if (!Array.isArray(groups)) throw ServiceError.validation([{ loc: at(), msg: 'must be a list of trajectory groups', type: 'list_type' }]);

  const sums = new Map<string, { total: number; count: number }>();
  const add = (key: string, value: number) => {
    const s = sums.get(key) ?? { total: 0, count: 0 };
    s.total += value;
    s.count += 1;
    sums.set(key, s);
  };
  let trajectories = 0;
  let exceptions = 0;
  const groupStdDevs: number[] = [];

  groups.forEach((group, g) => {
    if (!isObject(group) || !Array.isArray(group['trajectories'])) {
      issues.push({ loc: at(g, 'trajectories'), msg: 'every trajectory group needs a list of trajectories', type: 'missing' });
      return;
    }
    const rewards: number[] = [];
    group['trajectories'].forEach((trajectory, t) => {
      if (!isObject(trajectory)) {
        issues.push({ loc: at(g, 'trajectories', t), msg: 'must be an object', type: 'dict_type' });
        return;
      }
      const reward = trajectory['reward'] ?? 0;
      if (typeof reward !== 'number' || !Number.isFinite(reward)) {
        issues.push({ loc: at(g, 'trajectories', t, 'reward'), msg: `must be a finite number, got ${JSON.stringify(reward)}`, type: 'finite_number' });
        return;
      }
      rewards.push(reward);
      add('reward', reward);
      const metrics = trajectory['metrics'] ?? {};
      if (!isObject(metrics)) {
        issues.push({ loc: at(g, 'trajectories', t, 'metrics'), msg: 'must be an object of numbers', type: 'dict_type' });
        return;
      }
      for (const [key, value] of Object.entries(metrics)) {
        if (!storableName(key)) {
          issues.push({ loc: at(g, 'trajectories', t, 'metrics', key), msg: 'metric names must not contain NUL characters or unpaired surrogates', type: 'string_type' });
          continue;
        }
        const number = typeof value === 'boolean' ? Number(value) : value;
        if (typeof number !== 'number' || !Number.isFinite(number)) {
          issues.push({ loc: at(g, 'trajectories', t, 'metrics', key), msg: `must be a finite number or a boolean, got ${JSON.stringify(value)}`, type: 'finite_number' });
          continue;
        }
        add(key, number);
      }
    });
    trajectories += rewards.length;
    exceptions += Array.isArray(group['exceptions']) ? group['exceptions'].length : 0;
    if (rewards.length > 1) groupStdDevs.push(populationStdDev(rewards));
  });
  if (issues.length > 0) throw ServiceError.validation(issues);

  const metrics: Record<string, number> = {};
  for (const [key, { total, count }] of sums) metrics[key] = total / count;
  metrics['exception_rate'] = trajectories + exceptions === 0 ? 0 : exceptions / (trajectories + exceptions);
  metrics['reward_std_dev'] = groupStdDevs.length === 0 ? 0 : mean(groupStdDevs);
  return metrics;
}

/** `{split}/{name}` for every metric, as the checkpoint stores them. */
export function prefixMetrics(split: string, metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics).map(([key, value]) => [`${split}/${key}`, value]));
}

function populationStdDev(values: number[]): number {
  const m = mean(values);
  return Math.sqrt(mean(values.map((v) => (v - m) ** 2)));
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** Metric names become keys of a jsonb column, which refuses NUL and half a surrogate pair. */
function storableName(key: string): boolean {
  return !key.includes('\u0000') && !/\p{Cs}/u.test(key);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
