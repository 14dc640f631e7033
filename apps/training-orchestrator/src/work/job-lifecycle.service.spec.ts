import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { FakeBlobs, FakeBus, FakeJobQueue, InMemoryJobs } from '../../test/in-memory-jobs';
import { CANCELLED, TrainingJobsService } from '../jobs/training-jobs.service';
import { JobLifecycleService } from './job-lifecycle.service';

describe('JobLifecycleService', () => {
  let jobs: InMemoryJobs;
  let queue: FakeJobQueue;
  let blobs: FakeBlobs;
  let lifecycle: JobLifecycleService;

  beforeEach(() => {
    jobs = new InMemoryJobs();
    queue = new FakeJobQueue();
    blobs = new FakeBlobs();
    const bus = new FakeBus();
    // Only finish, appendEvent and recordFinalEvent are used here: they need the repository and the bus.
    const service = new TrainingJobsService(jobs.repository, queue.queue, null as never, blobs.blobs, null as never, bus.bus);
    lifecycle = new JobLifecycleService(jobs.repository, service, queue.queue, blobs.blobs);
  });

  const claim = (jobId: string, seq = 1) => lifecycle.claim({ job_id: jobId, message_seq: seq, delivery: 1, worker: 'w-1' });

  describe('claim', () => {
    it('moves a queued job to running and hands the worker its payload', async () => {
      const job = jobs.add();
      const reply = await claim(job.id);
      expect(reply).toMatchObject({ action: 'run', job: { job_id: job.id, type: 'sft', model_id: 'm-1', entity_name: 'acme', model_name: 'acme/project/agent' } });
      if (reply.action !== 'run') throw new Error('expected run');
      expect(blobs.stored.get(reply.job.payload as unknown as string)).toEqual(job.payload);
      expect(jobs.status(job.id)).toBe('running');
      expect(jobs.rows.get(job.id)?.attempts).toBe(1);
    });

    it("resolves a legacy payload's experimental_config for the worker, as a new job's is", async () => {
      const groups = [{ trajectories: [] }];
      const job = jobs.add({ type: 'rl', payload: { model_name: 'acme/project/agent', entity_name: 'acme', groups, experimental_config: { loss_fn: 'ppo', kl_penalty_step_lag: 1 } } });
      const reply = await claim(job.id);
      if (reply.action !== 'run') throw new Error('expected run');
      expect(blobs.stored.get(reply.job.payload as unknown as string)).toEqual({
        version: 2,
        type: 'rl',
        model_name: 'acme/project/agent',
        entity_name: 'acme',
        groups,
        settings: expect.objectContaining({ lossFn: 'ppo', epsilon: 0.2, epsilonHigh: 0.2 }),
        kl_reference: { steps_back: 1 },
      });
    });

    it('fails a legacy job whose config no longer validates, naming the key, and hands it to no worker', async () => {
      const job = jobs.add({ payload: { model_name: 'acme/project/agent', entity_name: 'acme', conversations: [], config: { batch_size: 0 }, experimental_config: null } });
      expect(await claim(job.id)).toEqual({ action: 'skip', reason: 'its payload does not validate' });
      expect(jobs.status(job.id)).toBe('failed');
      expect(jobs.rows.get(job.id)?.errorMessage).toMatch(/^config\.batch_size /);
      expect(blobs.stored.size).toBe(0);
      expect(queue.advanced).toEqual(['m-1']);
    });

    it.each(['succeeded', 'failed', 'cancelled'] as const)('skips a job already %s and leaves it so', async (status) => {
      const job = jobs.add({ status });
      expect(await claim(job.id)).toEqual({ action: 'skip', reason: `job already ${status}` });
      expect(jobs.status(job.id)).toBe(status);
    });

    it('skips a job that does not exist', async () => {
      expect(await claim('5f0c7d8e-0000-4000-8000-000000000000')).toMatchObject({ action: 'skip' });
    });

    it('finishes as cancelled a job whose cancel came while its worker was gone', async () => {
      const job = jobs.add({ status: 'running', cancelRequested: true });
      expect(await claim(job.id)).toEqual({ action: 'skip', reason: 'job was cancelled' });
      expect(jobs.status(job.id)).toBe('cancelled');
      expect(jobs.events).toEqual([expect.objectContaining({ jobId: job.id, type: 'training_failed', data: { error_message: CANCELLED } })]);
      expect(queue.advanced).toEqual(['m-1']);
    });

    it('restarts a running job only through the message it was claimed with', async () => {
      const job = jobs.add();
      await claim(job.id, 4);
      expect(await claim(job.id, 5)).toEqual({ action: 'skip', reason: 'job is running elsewhere' });
      expect(await claim(job.id, 4)).toMatchObject({ action: 'run' });
      expect(jobs.rows.get(job.id)?.attempts).toBe(2);
    });
  });

  describe('progress', () => {
    it('records training_started once, with the ignored keys and the reason for no steps', async () => {
      const job = jobs.add({ status: 'running', ignoredConfigKeys: ['config.foo'] });
      const report = { job_id: job.id, kind: 'started' as const, num_sequences: 3, no_gradient_steps_reason: 'too few tokens' };
      expect(await lifecycle.progress(report)).toEqual({ cancel_requested: false });
      await lifecycle.progress(report);
      expect(jobs.events).toEqual([
        expect.objectContaining({ type: 'training_started', data: { num_sequences: 3, ignored_config_keys: ['config.foo'], no_gradient_steps_reason: 'too few tokens' } }),
      ]);
      expect(jobs.rows.get(job.id)?.noStepsReason).toBe('too few tokens');
    });

    it('records each gradient step once, with its finite numeric metrics only', async () => {
      const job = jobs.add({ status: 'running' });
      const step = { job_id: job.id, kind: 'step' as const, step: 1, metrics: { loss: 0.5, lr: 1e-4, note: 'x', bad: Number.NaN } };
      await lifecycle.progress(step as never);
      await lifecycle.progress(step as never);
      await lifecycle.progress({ ...step, step: 2 } as never);
      expect(jobs.events.map((e) => [e.type, e.dedupeKey, e.data])).toEqual([
        ['gradient_step', 'step:1', { loss: 0.5, lr: 1e-4 }],
        ['gradient_step', 'step:2', { loss: 0.5, lr: 1e-4 }],
      ]);
    });

    it('tells the worker to stop when the job was cancelled or has ended, and records nothing for an ended one', async () => {
      const flagged = jobs.add({ status: 'running', cancelRequested: true });
      expect(await lifecycle.progress({ job_id: flagged.id, kind: 'step', step: 1, metrics: {} } as never)).toEqual({ cancel_requested: true });
      const ended = jobs.add({ status: 'failed' });
      expect(await lifecycle.progress({ job_id: ended.id, kind: 'step', step: 1, metrics: { loss: 1 } } as never)).toEqual({ cancel_requested: true });
      expect(jobs.eventTypes(ended.id)).toEqual([]);
    });

    it('is a not_found for a job that does not exist', async () => {
      await expect(lifecycle.progress({ job_id: 'nope', kind: 'step', step: 1, metrics: {} } as never)).rejects.toMatchObject({ code: ErrorCode.NotFound });
    });
  });

  describe('complete', () => {
    it('moves a running job to succeeded with its checkpoint, records training_ended, and starts the next job of the model', async () => {
      const job = jobs.add({ status: 'running' });
      const record = await lifecycle.complete({ job_id: job.id, outcome: 'succeeded', checkpoint_step: 12 });
      expect(record).toMatchObject({ id: job.id, status: 'succeeded', checkpoint_step: 12, error_message: null });
      expect(jobs.eventTypes(job.id)).toEqual(['training_ended']);
      expect(queue.advanced).toEqual(['m-1']);
    });

    it('moves a running job to failed with its error, recorded in training_failed', async () => {
      const job = jobs.add({ status: 'running' });
      const record = await lifecycle.complete({ job_id: job.id, outcome: 'failed', error_message: 'out of memory' });
      expect(record).toMatchObject({ status: 'failed', error_message: 'out of memory' });
      expect(jobs.events).toEqual([expect.objectContaining({ type: 'training_failed', data: { error_message: 'out of memory' } })]);
    });

    it('moves a running job to cancelled with the cancellation message', async () => {
      const job = jobs.add({ status: 'running', cancelRequested: true });
      expect(await lifecycle.complete({ job_id: job.id, outcome: 'cancelled' })).toMatchObject({ status: 'cancelled', error_message: CANCELLED });
    });

    it('keeps the first outcome of a job reported twice, and its one final event', async () => {
      const job = jobs.add({ status: 'running' });
      await lifecycle.complete({ job_id: job.id, outcome: 'succeeded', checkpoint_step: 3 });
      const again = await lifecycle.complete({ job_id: job.id, outcome: 'failed', error_message: 'late report' });
      expect(again).toMatchObject({ status: 'succeeded', checkpoint_step: 3, error_message: null });
      expect(jobs.eventTypes(job.id)).toEqual(['training_ended']);
    });

    it('is a not_found for a job that does not exist', async () => {
      const err = await lifecycle.complete({ job_id: 'nope', outcome: 'cancelled' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServiceError);
      expect((err as ServiceError).code).toBe(ErrorCode.NotFound);
    });
  });
});
