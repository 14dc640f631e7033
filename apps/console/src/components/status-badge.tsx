import { Badge } from '@mantine/core';
import type { TrainingJobStatus } from '../api/types';

const COLORS: Record<TrainingJobStatus, string> = {
  queued: 'gray',
  running: 'blue',
  succeeded: 'green',
  failed: 'red',
  cancelled: 'orange',
};

export function StatusBadge({ status }: { status: TrainingJobStatus }) {
  return (
    <Badge color={COLORS[status]} variant="light" data-testid="job-status">
      {status}
    </Badge>
  );
}
