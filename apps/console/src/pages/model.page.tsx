import { Alert, Code, Group, Loader, SimpleGrid, Slider, Stack, Table, Text, Title } from '@mantine/core';
import { servingName } from '@trainyard/contracts';
import { useEffect, useMemo, useState } from 'react';
import { api } from '../api/client';
import type { CheckpointRecord, DeleteCheckpointsReply, Page, TrainingJobRecord } from '../api/types';
import { ConfirmButton } from '../components/confirm-button';
import { JobsTable } from '../components/jobs-table';
import { MetricsList } from '../components/metrics-list';
import { RolloutFilters, Rollouts } from '../components/rollouts';
import { RunChart } from '../components/run-chart';
import { formatDate, modelLabel } from '../format';
import { runCharts } from '../runs/run-charts';
import { useLoad } from '../use-load';
import { loadModels } from './models.page';

/** How often the page looks for new checkpoints and metrics while it is open. */
const POLL_MS = 3000;

/** `?step=N` and `?job=ID` (the job page links here with them) preset the rollout filters. */
function filtersFromUrl(): RolloutFilters {
  const q = new URLSearchParams(window.location.search);
  const step = q.get('step');
  return {
    split: q.get('split'),
    step: step !== null && /^\d+$/.test(step) ? Number(step) : null,
    jobId: q.get('job'),
    minReward: null,
    maxReward: null,
  };
}

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

/**
 * One model: run charts of its checkpoints' metrics (kept current by polling), the
 * trajectories it was sent, its checkpoints (newest first, each deletable after a
 * confirmation) and its training jobs.
 */
export function ModelPage({ id }: { id: string }) {
  const model = useLoad(async () => (await loadModels()).find((m) => m.id === id) ?? null, [id]);
  const checkpoints = useLoad(() => allCheckpoints(id), [id]);
  const jobs = useLoad(() => api<Page<TrainingJobRecord>>('GET', `preview/training-jobs?model_id=${id}&limit=20`), [id]);
  const [smoothing, setSmoothing] = useState(0);
  const [initialFilters] = useState(filtersFromUrl);
  const { reload: reloadCheckpoints } = checkpoints;
  const { reload: reloadJobs } = jobs;

  useEffect(() => {
    const timer = setInterval(() => {
      reloadCheckpoints();
      reloadJobs();
    }, POLL_MS);
    return () => clearInterval(timer);
  }, [reloadCheckpoints, reloadJobs]);

  const charts = useMemo(() => runCharts(checkpoints.data ?? []), [checkpoints.data]);
  const splits = useMemo(() => {
    const names = new Set(['train', 'val']);
    for (const chart of charts) for (const split of chart.splits) if (split && split !== 'training') names.add(split);
    return [...names].sort();
  }, [charts]);
  const steps = useMemo(() => (checkpoints.data ?? []).map((c) => c.step).sort((a, b) => a - b), [checkpoints.data]);

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

      <Group justify="space-between" mt="md">
        <Title order={3}>Run charts</Title>
        <Group gap="xs" w={280}>
          <Text size="sm">Smoothing</Text>
          <Slider
            flex={1}
            min={0}
            max={0.99}
            step={0.01}
            value={smoothing}
            onChange={setSmoothing}
            label={(v) => v.toFixed(2)}
            aria-label="smoothing"
            data-testid="chart-smoothing"
          />
        </Group>
      </Group>
      {charts.length === 0 ? (
        <Text size="sm" c="dimmed" data-testid="run-charts-empty">
          No metrics yet: POST .../log and training jobs add them to the model's checkpoints.
        </Text>
      ) : (
        <SimpleGrid cols={{ base: 1, md: 2, xl: 3 }} data-testid="run-charts">
          {charts.map((chart) => (
            <RunChart key={chart.metric} chart={chart} smoothing={smoothing} />
          ))}
        </SimpleGrid>
      )}

      <Title order={3} mt="md">
        Rollouts
      </Title>
      <Rollouts modelId={id} splits={splits} steps={steps} initial={initialFilters} />

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
            <Table.Tr key={c.id} data-testid="checkpoint-row" data-step={c.step} bg={c.step === initialFilters.step ? 'yellow.1' : undefined}>
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
