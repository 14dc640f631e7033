import { Alert, Loader, Stack, Table, Text, Title } from '@mantine/core';
import { api } from '../api/client';
import type { CheckpointRecord, List, ModelRecord, Page } from '../api/types';
import { MetricsList } from '../components/metrics-list';
import { formatDate, modelLabel } from '../format';
import { Link } from '../router';
import { useLoad } from '../use-load';

interface ModelRow {
  model: ModelRecord;
  newest: CheckpointRecord | undefined;
}

export async function loadModels(): Promise<ModelRecord[]> {
  return (await api<List<ModelRecord>>('GET', 'preview/models')).data;
}

export function ModelsPage() {
  const rows = useLoad(async (): Promise<ModelRow[]> => {
    const models = await loadModels();
    return Promise.all(
      models.map(async (model) => ({
        model,
        newest: (await api<Page<CheckpointRecord>>('GET', `preview/models/${model.id}/checkpoints?limit=1&order=desc`)).data[0],
      })),
    );
  }, []);

  return (
    <Stack>
      <Title order={2}>Models</Title>
      {rows.error && <Alert color="red">{rows.error}</Alert>}
      {rows.loading && !rows.data && <Loader />}
      {rows.data?.length === 0 && (
        <Text c="dimmed" size="sm">
          No trainable models yet: create one with POST /v1/preview/models (ART's client does on its first run).
        </Text>
      )}
      {!!rows.data?.length && (
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Model</Table.Th>
              <Table.Th>Base model</Table.Th>
              <Table.Th>Newest step</Table.Th>
              <Table.Th>Metrics at that step</Table.Th>
              <Table.Th>Created</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.data.map(({ model, newest }) => (
              <Table.Tr key={model.id} data-testid="model-row" data-model-id={model.id}>
                <Table.Td>
                  <Link to={`/models/${model.id}`}>{modelLabel(model)}</Link>
                </Table.Td>
                <Table.Td ff="monospace">{model.base_model}</Table.Td>
                <Table.Td data-testid="model-newest-step">{newest?.step ?? '—'}</Table.Td>
                <Table.Td>
                  <MetricsList metrics={newest?.metrics} />
                </Table.Td>
                <Table.Td>{formatDate(new Date(model.created * 1000).toISOString())}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}
