import type { CheckpointRecord } from '@trainyard/contracts';

/**
 * The model page's run charts: one chart per metric name across the model's checkpoints,
 * x = step. A checkpoint metric "train/reward" is the metric "reward" of the split "train",
 * so "train/reward" and "val/reward" share one chart, one line per split; "training/loss" is
 * the training job's "loss". A name without a "/" is its own metric with one unnamed series.
 * Reward, reward spread, loss and exception rate come first, the rest by name.
 */
export interface RunChart {
  metric: string;
  /** Splits drawn on this chart, sorted; "" for a metric logged without a split. */
  splits: string[];
  /**
   * One row per step from the first checkpoint to the last. A deleted checkpoint's step is a
   * row with no values, so its lines break there instead of joining across it.
   */
  rows: ({ step: number } & Record<string, number | null>)[];
}

/** What RL runs are watched for comes first; every other metric follows by name. */
const FIRST = ['reward', 'reward_std_dev', 'loss', 'exception_rate'];

function chartOrder(a: string, b: string): number {
  const rank = (m: string) => (FIRST.includes(m) ? FIRST.indexOf(m) : FIRST.length);
  return rank(a) - rank(b) || a.localeCompare(b);
}

export function splitMetricName(name: string): { split: string; metric: string } {
  const slash = name.indexOf('/');
  return slash <= 0 || slash === name.length - 1 ? { split: '', metric: name } : { split: name.slice(0, slash), metric: name.slice(slash + 1) };
}

/** The series key of a split in a chart's rows ("" would be no valid key for recharts). */
export function seriesKey(split: string): string {
  return split === '' ? 'value' : split;
}

export function runCharts(checkpoints: Pick<CheckpointRecord, 'step' | 'metrics'>[]): RunChart[] {
  const sorted = [...checkpoints].sort((a, b) => a.step - b.step);
  if (sorted.length === 0) return [];
  const byMetric = new Map<string, Set<string>>();
  for (const c of sorted) {
    for (const name of Object.keys(c.metrics ?? {})) {
      const { split, metric } = splitMetricName(name);
      byMetric.set(metric, (byMetric.get(metric) ?? new Set()).add(split));
    }
  }
  const byStep = new Map(sorted.map((c) => [c.step, c]));
  const first = sorted[0].step;
  const last = sorted[sorted.length - 1].step;
  return [...byMetric.keys()].sort(chartOrder).map((metric) => {
    const splits = [...(byMetric.get(metric) as Set<string>)].sort();
    const rows = [];
    for (let step = first; step <= last; step++) {
      const metrics = byStep.get(step)?.metrics ?? {};
      const row: { step: number } & Record<string, number | null> = { step } as { step: number } & Record<string, number | null>;
      for (const split of splits) {
        const value = metrics[split === '' ? metric : `${split}/${metric}`];
        row[seriesKey(split)] = typeof value === 'number' && Number.isFinite(value) ? value : null;
      }
      rows.push(row);
    }
    return { metric, splits, rows };
  });
}

/**
 * Exponential moving average with debiasing, as W&B's smoothing slider does: weight 0 is the
 * raw series, near 1 very smooth. A missing value stays missing and does not move the average.
 */
export function smooth(values: (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return values;
  let average = 0;
  let count = 0;
  return values.map((value) => {
    if (value === null) return null;
    average = average * weight + (1 - weight) * value;
    count++;
    return average / (1 - Math.pow(weight, count));
  });
}

/** A chart's rows with every series smoothed. */
export function smoothRows(chart: RunChart, weight: number): RunChart['rows'] {
  if (weight <= 0) return chart.rows;
  const columns = chart.splits.map((split) => smooth(chart.rows.map((r) => r[seriesKey(split)] ?? null), weight));
  return chart.rows.map((row, i) => {
    const next = { ...row };
    chart.splits.forEach((split, s) => (next[seriesKey(split)] = columns[s][i]));
    return next;
  });
}
