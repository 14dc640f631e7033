import { Alert, Button, Group, Loader, NumberInput, Select, Stack, Text, Title } from '@mantine/core';
import { useCallback, useEffect, useState } from 'react';
import { api } from '../api/client';
import type { Page, TrajectoryRecord } from '../api/types';
import { shortId } from '../format';
import { Link } from '../router';
import { TrajectoryCard } from './trajectory-card';

export interface RolloutFilters {
  split: string | null;
  step: number | null;
  jobId: string | null;
  minReward: number | null;
  maxReward: number | null;
}

const PAGE = 50;

function query(filters: RolloutFilters, after?: string): string {
  const q = new URLSearchParams({ limit: String(PAGE), order: 'desc' });
  if (filters.split !== null) q.set('split', filters.split);
  if (filters.step !== null) q.set('step', String(filters.step));
  if (filters.jobId !== null) q.set('job_id', filters.jobId);
  if (filters.minReward !== null) q.set('min_reward', String(filters.minReward));
  if (filters.maxReward !== null) q.set('max_reward', String(filters.maxReward));
  if (after) q.set('after', after);
  return q.toString();
}

/** Consecutive trajectories of one group (same call, same group index), each in its group's order. */
function groupsOf(records: TrajectoryRecord[]): TrajectoryRecord[][] {
  const groups: TrajectoryRecord[][] = [];
  for (const record of records) {
    const last = groups.at(-1);
    if (last && last[0].batch_id === record.batch_id && last[0].group_index === record.group_index) last.push(record);
    else groups.push([record]);
  }
  return groups.map((g) => [...g].sort((a, b) => a.index - b.index));
}

const toNumber = (value: string | number): number | null => (value === '' || !Number.isFinite(Number(value)) ? null : Number(value));

/**
 * The trajectories a model was sent (POST .../log and its RL jobs), newest first, by step and
 * group, filtered by split, step, job and reward; more pages on demand.
 */
export function Rollouts({ modelId, splits, steps, initial }: { modelId: string; splits: string[]; steps: number[]; initial: RolloutFilters }) {
  const [filters, setFilters] = useState<RolloutFilters>(initial);
  const [records, setRecords] = useState<TrajectoryRecord[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);

  const load = useCallback(
    async (after?: string) => {
      setLoading(true);
      try {
        const page = await api<Page<TrajectoryRecord>>('GET', `preview/models/${modelId}/trajectories?${query(filters, after)}`);
        setRecords((previous) => (after ? [...previous, ...page.data] : page.data));
        setNext(page.has_more ? page.last_id : null);
        setError(undefined);
      } catch (err) {
        setError((err as Error).message);
      } finally {
        setLoading(false);
      }
    },
    [modelId, filters],
  );

  useEffect(() => {
    load();
  }, [load]);

  const set = (change: Partial<RolloutFilters>) => setFilters((f) => ({ ...f, ...change }));
  return (
    <Stack data-testid="rollouts">
      <Group align="flex-end">
        <Select
          label="Split"
          placeholder="all"
          data={splits}
          value={filters.split}
          onChange={(split) => set({ split })}
          clearable
          w={160}
          data-testid="rollouts-split"
        />
        <Select
          label="Step"
          placeholder="all"
          data={steps.map(String)}
          value={filters.step === null ? null : String(filters.step)}
          onChange={(step) => set({ step: step === null ? null : Number(step) })}
          clearable
          w={120}
          data-testid="rollouts-step"
        />
        <NumberInput label="Reward at least" value={filters.minReward ?? ''} onChange={(v) => set({ minReward: toNumber(v) })} w={140} data-testid="rollouts-min-reward" />
        <NumberInput label="Reward at most" value={filters.maxReward ?? ''} onChange={(v) => set({ maxReward: toNumber(v) })} w={140} data-testid="rollouts-max-reward" />
        {filters.jobId && (
          <Button variant="light" onClick={() => set({ jobId: null })} data-testid="rollouts-clear-job">
            Job {shortId(filters.jobId)} ×
          </Button>
        )}
        <Button variant="default" onClick={() => load()} data-testid="rollouts-refresh">
          Refresh
        </Button>
      </Group>
      {error && <Alert color="red">{error}</Alert>}
      {!loading && records.length === 0 && (
        <Text size="sm" c="dimmed" data-testid="rollouts-empty">
          No trajectories kept{filters.split || filters.step !== null || filters.jobId || filters.minReward !== null || filters.maxReward !== null ? ' that match' : ''}. POST .../log and RL training jobs send them.
        </Text>
      )}
      {groupsOf(records).map((group) => {
        const first = group[0];
        return (
          <Stack key={`${first.batch_id}:${first.group_index}:${first.id}`} gap="xs" data-testid="rollout-group" data-step={first.step} data-split={first.split}>
            <Title order={5}>
              Step {first.step} · {first.split} · group {first.group_index}{' '}
              <Text span size="sm" c="dimmed">
                {first.job_id ? (
                  <>
                    trained by job <Link to={`/jobs/${first.job_id}`}>{shortId(first.job_id)}</Link>
                  </>
                ) : (
                  'logged'
                )}
              </Text>
            </Title>
            {group.map((record) => (
              <TrajectoryCard key={record.id} record={record} />
            ))}
          </Stack>
        );
      })}
      {loading && <Loader size="sm" />}
      {next && !loading && (
        <Button variant="default" onClick={() => load(next)} data-testid="rollouts-more">
          More
        </Button>
      )}
    </Stack>
  );
}
