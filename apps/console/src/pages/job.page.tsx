import { Alert, Badge, Code, Group, Loader, Progress, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useCallback, useEffect, useReducer, useState } from 'react';
import { api, apiUrl } from '../api/client';
import type { TrainingEventRecord, TrainingJobRecord } from '../api/types';
import { ConfirmButton } from '../components/confirm-button';
import { MetricChart } from '../components/metric-chart';
import { StatusBadge } from '../components/status-badge';
import { formatDate, modelLabel } from '../format';
import { applyEvent, CHARTED_METRICS, newerJob, NO_PROGRESS, percentDone } from '../jobs/job-progress';
import { Link } from '../router';
import { useLoad } from '../use-load';
import { loadModels } from './models.page';

const EVENT_TYPES: TrainingEventRecord['type'][] = ['training_started', 'gradient_step', 'training_ended', 'training_failed'];
const FINAL_EVENTS: TrainingEventRecord['type'][] = ['training_ended', 'training_failed'];

/**
 * One job, followed live: its events arrive over Server-Sent Events (the browser sends the
 * session cookie; EventSource resumes with Last-Event-ID by itself after a dropped connection).
 */
export function JobPage({ id }: { id: string }) {
  const [job, setJob] = useState<TrainingJobRecord>();
  const [error, setError] = useState<string>();
  const [progress, apply] = useReducer(applyEvent, NO_PROGRESS);
  const [live, setLive] = useState(false);
  const models = useLoad(loadModels, []);

  const show = useCallback((read: TrainingJobRecord) => setJob((current) => newerJob(current, read)), []);
  const refresh = useCallback(
    () => api<TrainingJobRecord>('GET', `preview/training-jobs/${encodeURIComponent(id)}`).then(show, (err: Error) => setError(err.message)),
    [id, show],
  );

  useEffect(() => {
    refresh();
    const source = new EventSource(apiUrl(`preview/training-jobs/${encodeURIComponent(id)}/events`));
    const onEvent = (message: MessageEvent<string>) => {
      const event = JSON.parse(message.data) as TrainingEventRecord;
      apply(event);
      if (event.type !== 'gradient_step') refresh();
      // The stream ends after the final event; without close() EventSource would reconnect.
      if (FINAL_EVENTS.includes(event.type)) {
        source.close();
        setLive(false);
      }
    };
    for (const type of EVENT_TYPES) source.addEventListener(type, onEvent);
    source.onopen = () => setLive(true);
    source.onerror = () => setLive(source.readyState === EventSource.OPEN);
    return () => source.close();
  }, [id, refresh]);

  const cancel = async () => show(await api<TrainingJobRecord>('POST', `preview/training-jobs/${encodeURIComponent(id)}/cancel`));

  if (error && !job) return <Alert color="red">{error}</Alert>;
  if (!job) return <Loader />;
  const percent = percentDone(progress);
  const model = models.data?.find((m) => m.id === job.model_id);
  const active = job.status === 'queued' || job.status === 'running';
  const reason = job.no_gradient_steps_reason ?? progress.noStepsReason;
  return (
    <Stack>
      <Group justify="space-between">
        <Group>
          <Title order={2}>Training job</Title>
          <Code>{job.id}</Code>
          <StatusBadge status={job.status} />
          {live && (
            <Badge color="teal" variant="dot" data-testid="job-live">
              live
            </Badge>
          )}
        </Group>
        {active && (
          <ConfirmButton
            title="Cancel this training job?"
            message="A running job stops after its current gradient step and makes no checkpoint."
            confirmLabel="Cancel job"
            onConfirm={cancel}
            data-testid="cancel-job"
          >
            Cancel job
          </ConfirmButton>
        )}
      </Group>

      <Group gap="xl">
        <Text size="sm">
          Model <Link to={`/models/${job.model_id}`}>{model ? modelLabel(model) : job.model_id}</Link>
        </Text>
        <Text size="sm">Type {job.type.toUpperCase()}</Text>
        <Text size="sm">Created {formatDate(job.created_at)}</Text>
        <Text size="sm">Started {formatDate(job.training_start)}</Text>
        <Text size="sm">Ended {formatDate(job.training_end)}</Text>
        {job.checkpoint_step !== null && (
          <Text size="sm">
            Produced{' '}
            <Link to={`/models/${job.model_id}?step=${job.checkpoint_step}`} data-testid="job-checkpoint">
              checkpoint step {job.checkpoint_step}
            </Link>
          </Text>
        )}
        {job.type === 'rl' && (
          <Text size="sm">
            <Link to={`/models/${job.model_id}?job=${job.id}`} data-testid="job-rollouts">
              Rollouts it trained on
            </Link>
          </Text>
        )}
      </Group>

      {reason && (
        <Alert color="yellow" title="No gradient steps" data-testid="job-no-steps">
          {reason}
          {job.status === 'succeeded' && ' The job still ended with a checkpoint (the adapter unchanged), as every finished job does.'}
        </Alert>
      )}

      {job.status === 'failed' && (
        <Alert color="red" title="Training failed" data-testid="job-error">
          {job.error_message ?? progress.errorMessage ?? 'no message'}
        </Alert>
      )}
      {job.status === 'cancelled' && (
        <Alert color="orange" title="Cancelled" data-testid="job-error">
          {job.error_message ?? 'The job was cancelled.'}
        </Alert>
      )}

      <Stack gap={4}>
        <Text size="sm" data-testid="job-steps">
          {progress.points.length} / {progress.numSequences ?? '?'} gradient steps
        </Text>
        <Progress value={percent ?? 0} animated={job.status === 'running'} data-testid="job-progress" aria-label="gradient steps done" />
      </Stack>

      <SimpleGrid cols={{ base: 1, md: 2 }}>
        {CHARTED_METRICS.map((metric) => (
          <MetricChart key={metric} metric={metric} points={progress.points} finished={!active} />
        ))}
      </SimpleGrid>
    </Stack>
  );
}
