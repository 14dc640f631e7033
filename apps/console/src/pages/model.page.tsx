import { Alert, Code, Group, Loader, Stack, Table, Text, Title } from '@mantine/core';
import { api } from '../api/client';
import type { CheckpointRecord, DeleteCheckpointsReply, Page, TrainingJobRecord } from '../api/types';
import { ConfirmButton } from '../components/confirm-button';
import { JobsTable } from '../components/jobs-table';
import { MetricsList } from '../components/metrics-list';
import { formatDate, modelLabel, servingName } from '../format';
import { useLoad } from '../use-load';
import { loadModels } from './models.page';

async function allCheckpoints(modelId: string): Promise<CheckpointRecord[]> {
  const all: CheckpointRecord[] = [];
  let after: string | null = null;
  for (;;) {
    const page: Page<CheckpointRecord> = await api('GET', `preview/models/${modelId}/checkpoints?limit=100&order=desc${after ? `&after=${after}` : ''}`);
    all.push(...page.data);
    if (!page.has_more || !page.last_id) return all;
    after = page.last_id;
  }
}

/** One model: its checkpoints (newest first, each deletable after a confirmation) and its training jobs. */
export function ModelPage({ id }: { id: string }) {
  const model = useLoad(async () => (await loadModels()).find((m) => m.id === id) ?? null, [id]);
  const checkpoints = useLoad(() => allCheckpoints(id), [id]);
  const jobs = useLoad(() => api<Page<TrainingJobRecord>>('GET', `preview/training-jobs?model_id=${id}&limit=20`), [id]);

  const remove = async (step: number) => {
    await api<DeleteCheckpointsReply>('DELETE', `preview/models/${id}/checkpoints`, { steps: [step] });
    checkpoints.reload();
  };

  if (model.error) return <Alert color="red">{model.error}</Alert>;
  if (!model.data) return model.loading ? <Loader /> : <Alert color="yellow">Model {id} not found.</Alert>;
  const m = model.data;
  return (
    <Stack>
      <Title order={2}>{modelLabel(m)}</Title>
      <Group gap="xl">
        <Text size="sm">
          Base model <Code>{m.base_model}</Code>
        </Text>
        <Text size="sm">
          Served as <Code>{servingName(m)}</Code>
        </Text>
      </Group>

      <Title order={3} mt="md">
        Checkpoints
      </Title>
      {checkpoints.error && <Alert color="red">{checkpoints.error}</Alert>}
      <Table striped>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Step</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th>Metrics</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {(checkpoints.data ?? []).map((c) => (
            <Table.Tr key={c.id} data-testid="checkpoint-row" data-step={c.step}>
              <Table.Td>{c.step}</Table.Td>
              <Table.Td>{formatDate(c.created_at)}</Table.Td>
              <Table.Td>
                <MetricsList metrics={c.metrics} />
              </Table.Td>
              <Table.Td>
                <ConfirmButton
                  title={`Delete checkpoint step ${c.step}?`}
                  message={`Its adapter is deleted and ${servingName(m, c.step)} stops being served. Step numbers are never reused.`}
                  confirmLabel="Delete"
                  onConfirm={() => remove(c.step)}
                  data-testid="delete-checkpoint"
                >
                  Delete
                </ConfirmButton>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>

      <Title order={3} mt="md">
        Training jobs
      </Title>
      {jobs.error && <Alert color="red">{jobs.error}</Alert>}
      {jobs.data && <JobsTable jobs={jobs.data.data} models={new Map([[m.id, m]])} />}
    </Stack>
  );
}
