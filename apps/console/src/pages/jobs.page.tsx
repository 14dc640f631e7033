import { Alert, Loader, Stack, Title } from '@mantine/core';
import { useEffect } from 'react';
import { api } from '../api/client';
import type { ModelRecord, Page, TrainingJobRecord } from '../api/types';
import { JobsTable } from '../components/jobs-table';
import { useLoad } from '../use-load';
import { loadModels } from './models.page';

const REFRESH_MS = 5_000;

/** Every training job of the entity, newest first; the list refreshes itself. */
export function JobsPage() {
  const jobs = useLoad(async () => {
    const [page, models] = await Promise.all([api<Page<TrainingJobRecord>>('GET', 'preview/training-jobs?limit=100'), loadModels()]);
    return { jobs: page.data, models: new Map<string, ModelRecord>(models.map((m) => [m.id, m])) };
  }, []);
  const { reload } = jobs;
  useEffect(() => {
    const timer = setInterval(reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload]);

  return (
    <Stack>
      <Title order={2}>Training jobs</Title>
      {jobs.error && <Alert color="red">{jobs.error}</Alert>}
      {!jobs.data && jobs.loading && <Loader />}
      {jobs.data && <JobsTable jobs={jobs.data.jobs} models={jobs.data.models} />}
    </Stack>
  );
}
