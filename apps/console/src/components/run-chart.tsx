import { LineChart } from '@mantine/charts';
import { Card, Text } from '@mantine/core';
import { formatNumber } from '../format';
import { RunChart as RunChartData, seriesKey, smoothRows } from '../runs/run-charts';

/** A split keeps its colour on every chart. */
const SPLIT_COLORS: Record<string, string> = { train: 'teal.6', val: 'blue.6', training: 'orange.6', '': 'violet.6' };
const OTHER_COLORS = ['red.6', 'lime.7', 'pink.6', 'cyan.7', 'grape.6', 'yellow.7'];

function colorOf(split: string): string {
  if (SPLIT_COLORS[split]) return SPLIT_COLORS[split];
  let hash = 0;
  for (const char of split) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return OTHER_COLORS[hash % OTHER_COLORS.length];
}

/** One metric of a model's checkpoints against the step, a line per split; hovering shows each value. */
export function RunChart({ chart, smoothing }: { chart: RunChartData; smoothing: number }) {
  const rows = smoothRows(chart, smoothing);
  const drawn = chart.rows.filter((r) => chart.splits.some((s) => r[seriesKey(s)] !== null));
  return (
    <Card
      withBorder
      padding="md"
      data-testid={`run-chart-${chart.metric}`}
      data-points={drawn.length}
      data-steps={drawn.map((r) => r.step).join(',')}
      data-splits={chart.splits.join(',')}
      data-smoothing={smoothing}
    >
      <Text fw={600} size="sm" mb="xs" ff="monospace">
        {chart.metric}
      </Text>
      <LineChart
        h={180}
        data={rows}
        dataKey="step"
        series={chart.splits.map((split) => ({ name: seriesKey(split), label: split || chart.metric, color: colorOf(split) }))}
        curveType="linear"
        connectNulls={false}
        withLegend={chart.splits.length > 1 || chart.splits[0] !== ''}
        lineProps={{ isAnimationActive: false }}
        xAxisLabel="step"
        valueFormatter={formatNumber}
      />
    </Card>
  );
}
