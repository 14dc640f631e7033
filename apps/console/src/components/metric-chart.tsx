import { LineChart } from '@mantine/charts';
import { Card, Text } from '@mantine/core';
import { formatNumber } from '../format';
import { ChartedMetric, seriesOf, StepPoint } from '../jobs/job-progress';

const TITLES: Record<ChartedMetric, string> = {
  loss: 'Loss',
  reward: 'Reward',
  grad_norm: 'Grad norm',
  learning_rate: 'Learning rate',
};
const COLORS: Record<ChartedMetric, string> = { loss: 'red.6', reward: 'teal.6', grad_norm: 'violet.6', learning_rate: 'blue.6' };

/** One gradient-step metric against the step number; it grows as the job's events arrive. */
export function MetricChart({ metric, points, finished = false }: { metric: ChartedMetric; points: StepPoint[]; finished?: boolean }) {
  const data = seriesOf(points, metric);
  return (
    <Card withBorder padding="md" data-testid={`chart-${metric}`} data-points={data.length}>
      <Text fw={600} size="sm" mb="xs">
        {TITLES[metric]}
        {data.length > 0 && (
          <Text span c="dimmed" size="sm" ml="xs">
            last {formatNumber(data[data.length - 1].value)}
          </Text>
        )}
      </Text>
      {data.length === 0 ? (
        <Text size="sm" c="dimmed" h={180}>
          {finished ? 'No gradient steps.' : 'No gradient steps yet.'}
        </Text>
      ) : (
        <LineChart
          h={180}
          data={data}
          dataKey="step"
          series={[{ name: 'value', label: TITLES[metric], color: COLORS[metric] }]}
          curveType="linear"
          withLegend={false}
          lineProps={{ isAnimationActive: false }}
          xAxisLabel="step"
          valueFormatter={formatNumber}
        />
      )}
    </Card>
  );
}
