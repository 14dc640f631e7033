import type { CheckpointRecord } from '@trainyard/contracts';
import { runCharts, smooth, smoothRows, splitMetricName } from './run-charts';

describe('run charts', () => {
  const checkpoints: Pick<CheckpointRecord, 'step' | 'metrics'>[] = [
    { step: 2, metrics: { 'train/reward': 0.5, 'val/reward': 0.25, 'training/loss': 1.5 } },
    { step: 0, metrics: { 'train/reward': 0.1, 'val/reward': 0.2, reward_std_dev: 0.3 } },
    { step: 3, metrics: { 'train/reward': 0.9 } },
  ];

  it('makes one chart per metric, the splits that share its name on it, reward and loss first', () => {
    const charts = runCharts([...checkpoints, { step: 4, metrics: { 'train/accuracy': 1 } }]);
    expect(charts.map((c) => [c.metric, c.splits])).toEqual([
      ['reward', ['train', 'val']],
      ['reward_std_dev', ['']],
      ['loss', ['training']],
      ['accuracy', ['train']],
    ]);
  });

  it('puts every step in order, a deleted step as a row without values so lines break there', () => {
    const reward = runCharts(checkpoints).find((c) => c.metric === 'reward');
    expect(reward?.rows).toEqual([
      { step: 0, train: 0.1, val: 0.2 },
      { step: 1, train: null, val: null },
      { step: 2, train: 0.5, val: 0.25 },
      { step: 3, train: 0.9, val: null },
    ]);
    expect(runCharts(checkpoints).find((c) => c.metric === 'reward_std_dev')?.rows[0]).toEqual({ step: 0, value: 0.3 });
  });

  it('reads the split as the part before the first slash', () => {
    expect(splitMetricName('val/tool/calls')).toEqual({ split: 'val', metric: 'tool/calls' });
    expect(splitMetricName('plain')).toEqual({ split: '', metric: 'plain' });
    expect(splitMetricName('/odd')).toEqual({ split: '', metric: '/odd' });
  });

  it('has no charts for no checkpoints', () => {
    expect(runCharts([])).toEqual([]);
  });

  it('smooths with a debiased moving average that skips gaps', () => {
    expect(smooth([1, null, 3], 0)).toEqual([1, null, 3]);
    const smoothed = smooth([1, null, 3], 0.5);
    expect(smoothed[0]).toBeCloseTo(1);
    expect(smoothed[1]).toBeNull();
    // (0.5 * 0.5 * 1 + 0.5 * 3) / (1 - 0.25) = 2.333...
    expect(smoothed[2]).toBeCloseTo(7 / 3);
    const chart = runCharts(checkpoints).find((c) => c.metric === 'reward');
    expect(smoothRows(chart as NonNullable<typeof chart>, 0.5)[1]).toEqual({ step: 1, train: null, val: null });
  });
});
