import { CheckpointRecord, ErrorCode, FineTuningDetails, ModelRecord, ServiceError, Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { FakeBlobs, FakeBus, FakeJobQueue, InMemoryJobs } from '../../test/in-memory-jobs';
import { TrainingDataSource } from '../data/training-data.source';
import { CANCELLED, TrainingJobsService } from './training-jobs.service';

const CALLER = { entity_id: 'e-1', entity_name: 'acme' };
const MODEL = { id: 'm-1', entity: 'acme', project: 'project', name: 'agent' } as unknown as ModelRecord;
const STORED_GROUPS = { sha256: 'a'.repeat(64), bytes: 1234 };
const SFT_LINE = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] });

describe('TrainingJobsService', () => {
  let jobs: InMemoryJobs;
  let queue: FakeJobQueue;
  let bus: FakeBus;
  let blobs: FakeBlobs;
  let trainingData: string;
  let service: TrainingJobsService;
  /** What the registry answers for getModel: the caller's model, or a refusal. */
  let model: ModelRecord | ServiceError;
  /** The model's checkpoints, newest first, as the registry lists them. */
  let checkpoints: CheckpointRecord[];
  /** What the registry was asked, by subject. */
  let asked: { subject: string; request: Record<string, unknown> }[];

  beforeEach(() => {
    jobs = new InMemoryJobs();
    queue = new FakeJobQueue();
    bus = new FakeBus();
    blobs = new FakeBlobs();
    model = MODEL;
    checkpoints = [];
    trainingData = SFT_LINE;
    asked = [];
    const rpc = {
      request: async (subject: { name: string }, request: Record<string, unknown>) => {
        asked.push({ subject: subject.name, request });
        if (subject.name === Subjects.registry.listCheckpoints.name) return { object: 'list', data: checkpoints, has_more: false };
        // The registry takes the gateway's blob into the artifact store and answers its digest.
        if (subject.name === Subjects.registry.storeJobTrajectories.name) {
          blobs.blobs.takeJson(request['trajectory_groups'] as never);
          return STORED_GROUPS;
        }
        // A created RL job's groups are then kept as trajectories (not awaited).
        if (subject.name === Subjects.registry.recordTrajectories.name) return {};
        if (subject.name !== Subjects.registry.getModel.name) throw new Error(`unexpected request on ${subject.name}`);
        if (model instanceof ServiceError) throw model;
        return model;
      },
    } as unknown as RpcClient;
    const data = { read: async () => trainingData } as unknown as TrainingDataSource;
    service = new TrainingJobsService(jobs.repository, queue.queue, rpc, blobs.blobs, data, bus.bus);
  });

  const cancel = (jobId: string, entityId = 'e-1') => service.cancel({ ...CALLER, entity_id: entityId, job_id: jobId });

  describe('cancel', () => {
    it('cancels a queued job at once, records its final event and starts the next job of the model', async () => {
      const job = jobs.add({ status: 'queued' });
      expect(await cancel(job.id)).toMatchObject({ status: 'cancelled', error_message: CANCELLED });
      expect(jobs.events).toEqual([expect.objectContaining({ type: 'training_failed', data: { error_message: CANCELLED } })]);
      expect(queue.advanced).toEqual(['m-1']);
      expect(bus.published.filter((p) => p.subject === Subjects.training.cancelRequested.name)).toEqual([]);
    });

    it('flags a running job and tells its worker, which stops between steps', async () => {
      const job = jobs.add({ status: 'running' });
      expect(await cancel(job.id)).toMatchObject({ status: 'running' });
      expect(jobs.rows.get(job.id)?.cancelRequested).toBe(true);
      expect(bus.published).toContainEqual(expect.objectContaining({ subject: Subjects.training.cancelRequested.name, payload: { job_id: job.id } }));
      expect(jobs.events).toEqual([]);
      expect(queue.advanced).toEqual([]);
    });

    it('does nothing for a job already cancelled', async () => {
      const job = jobs.add({ status: 'cancelled', errorMessage: CANCELLED });
      expect(await cancel(job.id)).toMatchObject({ status: 'cancelled' });
      expect(jobs.events).toEqual([]);
      expect(bus.published).toEqual([]);
    });

    it.each(['succeeded', 'failed'] as const)('refuses with a conflict to cancel a job that %s', async (status) => {
      const job = jobs.add({ status });
      await expect(cancel(job.id)).rejects.toMatchObject({ code: ErrorCode.Conflict });
      expect(jobs.status(job.id)).toBe(status);
    });

    it("answers not_found for another entity's job and for an id that is no uuid", async () => {
      const job = jobs.add({ status: 'queued' });
      await expect(cancel(job.id, 'e-2')).rejects.toMatchObject({ code: ErrorCode.NotFound });
      await expect(cancel('not-a-uuid')).rejects.toMatchObject({ code: ErrorCode.NotFound });
      expect(jobs.status(job.id)).toBe('queued');
    });
  });

  describe('events', () => {
    it('stores an event once per dedupe key and wakes the job’s event streams only when it was new', async () => {
      const job = jobs.add();
      await service.appendEvent(job.id, 'gradient_step', { loss: 1 }, 'step:1');
      await service.appendEvent(job.id, 'gradient_step', { loss: 1 }, 'step:1');
      expect(jobs.events).toHaveLength(1);
      expect(bus.published).toEqual([{ subject: Subjects.training.eventsAppended.name, payload: { job_id: job.id }, suffix: job.id }]);
    });

    it('records training_ended for success and training_failed, with a message, for any other end', async () => {
      const a = jobs.add();
      const b = jobs.add();
      await service.recordFinalEvent(a.id, 'succeeded', null);
      await service.recordFinalEvent(b.id, 'failed', null);
      expect(jobs.events.map((e) => [e.type, e.data])).toEqual([
        ['training_ended', {}],
        ['training_failed', { error_message: 'training job failed' }],
      ]);
    });
  });

  describe('fine-tuning jobs', () => {
    const details = { base_model: 'b' } as FineTuningDetails;

    it('are the only jobs found when the request asks for fine-tuning jobs', async () => {
      const art = jobs.add({ status: 'queued' });
      const ft = jobs.add({ status: 'queued', fineTuning: details });
      const get = (jobId: string) => service.get({ ...CALLER, job_id: jobId, fine_tuning: true });
      await expect(get(art.id)).rejects.toMatchObject({ code: ErrorCode.NotFound });
      expect(await get(ft.id)).toMatchObject({ id: ft.id, fine_tuning: details });
      await expect(service.cancel({ ...CALLER, job_id: art.id, fine_tuning: true })).rejects.toMatchObject({ code: ErrorCode.NotFound });
      expect(jobs.status(art.id)).toBe('queued');
      expect(await service.get({ ...CALLER, job_id: art.id })).toMatchObject({ id: art.id, fine_tuning: null });
    });
  });

  describe('progress', () => {
    it('says how far a running job got, and nothing for one that does not run', async () => {
      const running = jobs.add({ status: 'running' });
      const done = jobs.add({ status: 'succeeded', checkpointStep: 1 });
      for (const job of [running, done]) {
        await service.appendEvent(job.id, 'training_started', { num_sequences: 5 }, 'started');
        await service.appendEvent(job.id, 'gradient_step', { loss: 1 }, 'step:1');
        await service.appendEvent(job.id, 'gradient_step', { loss: 1 }, 'step:2');
      }
      expect((await service.get({ ...CALLER, job_id: running.id })).progress).toEqual({ steps_done: 2, num_steps: 5 });
      expect((await service.get({ ...CALLER, job_id: done.id })).progress).toBeNull();
      const page = await service.list({ ...CALLER, limit: 10 });
      expect(page.data.map((j) => j.progress)).toContainEqual({ steps_done: 2, num_steps: 5 });
    });
  });

  describe('listCheckpoints', () => {
    const list = (jobId: string, after?: string) => service.listCheckpoints({ ...CALLER, job_id: jobId, limit: 20, after });
    const checkpoint = (id: string, step: number): CheckpointRecord => ({ id, step, metrics: {}, created_at: '2026-01-01T00:05:00.000Z', adapter_sha256: 'x' });

    it('is the checkpoint the job wrote, named as chat serves it, with the metrics of its last step', async () => {
      const job = jobs.add({ status: 'succeeded', checkpointStep: 2 });
      checkpoints = [checkpoint('later', 3), checkpoint(job.id, 2), checkpoint('first', 1)];
      await service.appendEvent(job.id, 'gradient_step', { loss: 2 }, 'step:1');
      await service.appendEvent(job.id, 'gradient_step', { loss: 1, valid_loss: 1.5 }, 'step:2');
      const page = await list(job.id);
      expect(page).toMatchObject({ first_id: job.id, last_id: job.id, has_more: false });
      expect(page.data).toEqual([
        {
          id: job.id,
          job_id: job.id,
          model_id: 'm-1',
          step: 2,
          model_name: 'wandb-artifact:///acme/project/agent:step2',
          num_gradient_steps: 2,
          last_step_metrics: { loss: 1, valid_loss: 1.5 },
          created_at: '2026-01-01T00:05:00.000Z',
        },
      ]);
      expect((await list(job.id, job.id)).data).toEqual([]);
    });

    it('is empty before the job succeeded, and once its checkpoint or model is gone', async () => {
      const running = jobs.add({ status: 'running' });
      expect((await list(running.id)).data).toEqual([]);
      const done = jobs.add({ status: 'succeeded', checkpointStep: 2 });
      checkpoints = [checkpoint('first', 1)];
      expect((await list(done.id)).data).toEqual([]);
      model = ServiceError.notFound('Model m-1 not found');
      expect((await list(done.id)).data).toEqual([]);
    });
  });

  describe('createRl', () => {
    /** One group of two trajectories, each a user message and a sampled Choice, as ART's client sends them. */
    const GROUPS = [
      {
        trajectories: [0, 1].map((reward) => ({
          reward,
          messages_and_choices: [
            { role: 'user', content: 'hi' },
            { message: { role: 'assistant', content: 'ok' }, logprobs: { content: [5, 7].map((id) => ({ token_id: id, logprob: -1 })) } },
          ],
        })),
      },
    ];
    const create = async (experimentalConfig: Record<string, unknown> | null) =>
      service.createRl({ ...CALLER, model_id: 'm-1', trajectory_groups: await blobs.blobs.putJson(GROUPS), experimental_config: experimentalConfig });

    it("stores the experimental_config as the trainer's settings, the config as sent for the record, and names the groups stored once", async () => {
      const config = { loss_fn: 'ppo', kl_penalty_reference_step: 2, future_knob: 1 };
      const { id } = await create(config);
      const row = jobs.rows.get(id);
      expect(row?.experimentalConfig).toEqual(config);
      expect(row?.ignoredConfigKeys).toEqual(['experimental_config.future_knob']);
      expect(row?.payload).toEqual({
        version: 3,
        type: 'rl',
        model_name: 'wandb-artifact:///acme/project/agent',
        entity_name: 'acme',
        trajectory_groups: STORED_GROUPS,
        settings: expect.objectContaining({ lossFn: 'ppo', epsilon: 0.2, epsilonHigh: 0.2, learningRate: 5e-6 }),
        kl_reference: { step: 2 },
      });
      expect(queue.advanced).toEqual(['m-1']);
    });

    it("hands the gateway's blob to the registry to store for the job, parks nothing again, and keeps the trajectories by reference", async () => {
      const { id } = await create(null);
      const stores = asked.filter((a) => a.subject === Subjects.registry.storeJobTrajectories.name);
      expect(stores).toEqual([{ subject: Subjects.registry.storeJobTrajectories.name, request: expect.objectContaining({ job_id: id, model_id: 'm-1', trajectory_groups: 'blob-1' }) }]);
      // The one blob the gateway parked was taken by the registry; the orchestrator parked none of its own.
      expect(blobs.stored.size).toBe(0);
      const record = asked.find((a) => a.subject === Subjects.registry.recordTrajectories.name);
      expect(record?.request).toEqual({ ...CALLER, model_id: 'm-1', job_id: id, split: 'train', as_of: expect.any(String) });
    });

    it('refuses an invalid experimental_config naming the key, before storing anything', async () => {
      const err = (await create({ kl_penalty_reference_step: -1 }).catch((e: unknown) => e)) as ServiceError;
      expect(err.code).toBe(ErrorCode.ValidationFailed);
      expect(err.details.issues?.map((i) => i.loc)).toEqual([['body', 'experimental_config', 'kl_penalty_reference_step']]);
      expect(jobs.rows.size).toBe(0);
      expect(asked.map((a) => a.subject)).not.toContain(Subjects.registry.storeJobTrajectories.name);
      // Nobody will read the groups: their blob is gone.
      expect(blobs.stored.size).toBe(0);
    });

    it('refuses groups without sampling logprobs unless the settings allow them, as the worker will map them', async () => {
      const noLogprobs = [{ trajectories: [{ reward: 1, messages_and_choices: [{ role: 'user', content: 'hi' }, { message: { role: 'assistant', content: 'ok' }, token_ids: [5] }] }] }];
      const request = async (experimental_config: Record<string, unknown> | null) =>
        service.createRl({ ...CALLER, model_id: 'm-1', trajectory_groups: await blobs.blobs.putJson(noLogprobs), experimental_config });
      await expect(request(null)).rejects.toMatchObject({ code: ErrorCode.ValidationFailed });
      await expect(request({ allow_training_without_logprobs: true })).resolves.toEqual({ id: expect.any(String) });
    });
  });

  describe('ended', () => {
    it('names the jobs that will not run again: ended, or no job at all; never a queued or running one', async () => {
      const [queued, running, succeeded, failed, cancelled] = (['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const).map((status) => jobs.add({ status }).id);
      const unknown = '00000000-0000-4000-8000-000000000000';
      const reply = await service.ended({ job_ids: [queued, running, succeeded, failed, cancelled, unknown, 'not-a-uuid'] });
      expect(reply.job_ids).toEqual([succeeded, failed, cancelled, unknown, 'not-a-uuid']);
    });
  });

  describe('createSft', () => {
    const request = (extra: object = {}) => ({ ...CALLER, model_id: 'm-1', training_data_url: 'file-1', config: null, experimental_config: null, ...extra });

    it('stores a valid job as queued and queues it', async () => {
      const { id } = await service.createSft(request());
      expect(jobs.status(id)).toBe('queued');
      expect(queue.advanced).toEqual(['m-1']);
    });

    it("stores the config resolved into the trainer's settings", async () => {
      const { id } = await service.createSft(request({ config: { batch_size: 2, assistant_turns: 'last' } }));
      expect(jobs.rows.get(id)?.payload).toEqual({
        version: 2,
        type: 'sft',
        model_name: 'wandb-artifact:///acme/project/agent',
        entity_name: 'acme',
        conversations: [JSON.parse(SFT_LINE)],
        settings: { batchSize: 2, learningRate: 5e-5, assistantTurns: 'last' },
      });
    });

    it('accepts a stored job even when the queue cannot take it yet (the queue retries)', async () => {
      queue.fails = true;
      const { id } = await service.createSft(request());
      expect(jobs.status(id)).toBe('queued');
    });

    it('refuses an invalid config with every problem, before storing anything', async () => {
      const err = (await service.createSft(request({ config: { batch_size: 0 } })).catch((e: unknown) => e)) as ServiceError;
      expect(err.code).toBe(ErrorCode.ValidationFailed);
      expect(err.details.issues?.[0].loc).toEqual(['body', 'config', 'batch_size']);
      expect(jobs.rows.size).toBe(0);
    });

    it('refuses training data that does not parse, naming the field', async () => {
      trainingData = '{"messages": "no"}';
      const err = (await service.createSft(request()).catch((e: unknown) => e)) as ServiceError;
      expect(err.code).toBe(ErrorCode.ValidationFailed);
      expect(err.details.issues?.[0].loc).toEqual(['body', 'training_data_url']);
      expect(jobs.rows.size).toBe(0);
    });

    it("passes on the registry's refusal of a model that is not the caller's", async () => {
      model = ServiceError.notFound('Model m-1 not found');
      await expect(service.createSft(request())).rejects.toMatchObject({ code: ErrorCode.NotFound });
      expect(jobs.rows.size).toBe(0);
    });
  });
});
