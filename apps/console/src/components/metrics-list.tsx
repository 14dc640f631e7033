import { Group, Text } from '@mantine/core';
import { formatNumber } from '../format';

/** A checkpoint's metrics ("train/reward": 0.5, ...), compactly. */
export function MetricsList({ metrics }: { metrics: Record<string, number> | undefined }) {
  const entries = Object.entries(metrics ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        none
      </Text>
    );
  }
  return (
    <Group gap="md">
      {entries.map(([name, value]) => (
        <Text key={name} size="sm" ff="monospace">
          <Text span c="dimmed" inherit>
            {name}
          </Text>{' '}
          {formatNumber(value)}
        </Text>
      ))}
    </Group>
  );
}
