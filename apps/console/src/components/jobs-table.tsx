import { Table, Text } from '@mantine/core';
import type { ModelRecord, TrainingJobRecord } from '../api/types';
import { formatDate, modelLabel, shortId } from '../format';
import { Link } from '../router';
import { StatusBadge } from './status-badge';

export function JobsTable({ jobs, models }: { jobs: TrainingJobRecord[]; models: Map<string, ModelRecord> }) {
  if (jobs.length === 0) {
    return (
      <Text c="dimmed" size="sm">
        No training jobs yet.
      </Text>
    );
  }
  return (
    <Table striped highlightOnHover>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Job</Table.Th>
          <Table.Th>Model</Table.Th>
          <Table.Th>Type</Table.Th>
          <Table.Th>Status</Table.Th>
          <Table.Th>Created</Table.Th>
          <Table.Th>Checkpoint</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {jobs.map((job) => {
          const model = models.get(job.model_id);
          return (
            <Table.Tr key={job.id} data-testid="job-row" data-job-id={job.id}>
              <Table.Td>
                <Link to={`/jobs/${job.id}`} ff="monospace" fz="sm">
                  {shortId(job.id)}
                </Link>
              </Table.Td>
              <Table.Td>{model ? <Link to={`/models/${model.id}`}>{modelLabel(model)}</Link> : shortId(job.model_id)}</Table.Td>
              <Table.Td>{job.type.toUpperCase()}</Table.Td>
              <Table.Td>
                <StatusBadge status={job.status} />
              </Table.Td>
              <Table.Td>{formatDate(job.created_at)}</Table.Td>
              <Table.Td>{job.checkpoint_step ?? '—'}</Table.Td>
            </Table.Tr>
          );
        })}
      </Table.Tbody>
    </Table>
  );
}
