import { BaseModelInfo, CreateFineTuningJobRequest, ErrorCode, ModelRecord, ServiceError, SftJobPayload, Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { FakeBlobs, FakeBus, FakeJobQueue, InMemoryJobs } from '../../test/in-memory-jobs';
import { TrainingDataSource } from '../data/training-data.source';
import { TrainingJobsService } from '../jobs/training-jobs.service';
import { FINE_TUNING_PROJECT, FineTuningJobsService } from './fine-tuning-jobs.service';
import { BASE_LEARNING_RATE } from './hyperparameters';

const CALLER = { entity_id: 'e-1', entity_name: 'acme' };
const BASE: BaseModelInfo = { id: 'trainyard/tiny-chat', architecture: 'llama', unsupported: null, created: 0 };
const line = (q: string, a: string) => JSON.stringify({ messages: [{ role: 'user', content: q }, { role: 'assistant', content: a }] });
const TRAIN = [line('hi', 'hello'), line('bye', 'goodbye'), line('yes', 'no')].join('\n');

describe('FineTuningJobsService', () => {
  let jobs: InMemoryJobs;
  let queue: FakeJobQueue;
  let calls: { subject: string; payload: Record<string, unknown> }[];
  let files: Record<string, string>;
  let service: FineTuningJobsService;

  beforeEach(() => {
    jobs = new InMemoryJobs();
    queue = new FakeJobQueue();
    calls = [];
    files = { 'file-train': TRAIN, 'file-valid': line('up', 'down') };
    const rpc = {
      request: async (subject: { name: string }, payload: Record<string, unknown>) => {
        calls.push({ subject: subject.name, payload });
        switch (subject.name) {
          case Subjects.registry.listBaseModels.name:
            return { base_models: [BASE, { ...BASE, id: 'google/gemma-3', unsupported: 'architecture gemma3' }] };
          case Subjects.registry.createModel.name:
            return { id: 'm-ft', entity: 'acme', project: payload['project'], name: payload['name'], base_model: payload['base_model'], run_id: null, created: 0 } as ModelRecord;
          case Subjects.registry.deleteModel.name:
            return { model_id: payload['model_id'], deleted_checkpoints: 1, deleted_run: false };
          default:
            throw new Error(`unexpected request on ${subject.name}`);
        }
      },
    } as unknown as RpcClient;
    const data = {
      readUploadedFile: async (_: unknown, fileId: string, field: string) => {
        if (!(fileId in files)) throw ServiceError.invalid(`${field} ${fileId} is not a file you uploaded`, field);
        return files[fileId];
      },
    } as unknown as TrainingDataSource;
    const trainingJobs = new TrainingJobsService(jobs.repository, queue.queue, rpc, new FakeBlobs().blobs, data, new FakeBus().bus);
    service = new FineTuningJobsService(trainingJobs, rpc, data);
  });

  const request = (fields: Partial<CreateFineTuningJobRequest> = {}): CreateFineTuningJobRequest => ({
    ...CALLER,
    model: BASE.id,
    training_file: 'file-train',
    validation_file: null,
    suffix: null,
    seed: null,
    metadata: null,
    hyperparameters: {},
    ...fields,
  });
  const subjects = () => calls.map((c) => c.subject);

  it('makes a model for the job, named after it, and queues an SFT job that trains it as asked', async () => {
    const record = await service.create(
      request({ suffix: 'bot', seed: 7, validation_file: 'file-valid', metadata: { team: 'support' }, hyperparameters: { n_epochs: 2, learning_rate_multiplier: 0.5 } }),
    );
    const hex = record.id.replaceAll('-', '');
    const created = calls.find((c) => c.subject === Subjects.registry.createModel.name)?.payload;
    expect(created).toEqual({ ...CALLER, entity: null, project: FINE_TUNING_PROJECT, name: `bot-${hex}`, base_model: BASE.id, return_existing: false });
    expect(record).toMatchObject({
      type: 'sft',
      status: 'queued',
      model_id: 'm-ft',
      fine_tuning: {
        base_model: BASE.id,
        training_file: 'file-train',
        validation_file: 'file-valid',
        suffix: 'bot',
        seed: 7,
        metadata: { team: 'support' },
        hyperparameters: { n_epochs: 2, batch_size: 3, learning_rate_multiplier: 0.5 },
        model: { entity: 'acme', project: FINE_TUNING_PROJECT, name: `bot-${hex}` },
      },
    });
    const payload = jobs.rows.get(record.id)?.payload;
    expect(payload).toMatchObject({
      model_name: `wandb-artifact:///acme/${FINE_TUNING_PROJECT}/bot-${hex}`,
      version: 2,
      type: 'sft',
      settings: { batchSize: 3, learningRate: 0.5 * BASE_LEARNING_RATE, assistantTurns: 'all' },
      epochs: 2,
      shuffle_seed: 7,
      validation_conversations: [{ messages: [{ role: 'user', content: 'up' }, { role: 'assistant', content: 'down' }] }],
    });
    expect((payload as SftJobPayload).conversations).toHaveLength(3);
    expect(queue.advanced).toEqual(['m-ft']);
  });

  it('draws a seed, names the model "ft-<job>" without a suffix and keeps no empty metadata', async () => {
    const record = await service.create(request({ metadata: {} }));
    expect(Number.isInteger(record.fine_tuning?.seed)).toBe(true);
    expect(record.fine_tuning?.model.name).toBe(`ft-${record.id.replaceAll('-', '')}`);
    expect(record.fine_tuning?.metadata).toBeNull();
    expect(record.fine_tuning?.hyperparameters).toEqual({ n_epochs: 25, batch_size: 3, learning_rate_multiplier: 1 });
  });

  it('refuses a bad line of either file, naming the field and the line, before anything is made', async () => {
    files['file-bad'] = `${line('a', 'b')}\n{"messages": [{"role": "user", "content": "no answer"}]}\nnot json`;
    for (const fields of [{ training_file: 'file-bad' }, { validation_file: 'file-bad' }]) {
      const err = (await service.create(request(fields)).catch((e: unknown) => e)) as ServiceError;
      expect(err.code).toBe(ErrorCode.ValidationFailed);
      const field = Object.keys(fields)[0];
      expect(err.details.issues?.map((i) => [i.loc, i.msg.split(' ').slice(0, 2).join(' ')])).toEqual([
        [['body', field], 'line 2'],
        [['body', field], 'line 3'],
      ]);
    }
    expect(subjects()).not.toContain(Subjects.registry.createModel.name);
    expect(jobs.rows.size).toBe(0);
  });

  it('refuses a model that is no base model it can train, naming the field and what it can', async () => {
    for (const model of ['gpt-4o-mini', 'wandb-artifact:///acme/p/m', 'google/gemma-3']) {
      const err = (await service.create(request({ model })).catch((e: unknown) => e)) as ServiceError;
      expect(err).toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'model' } });
    }
    const unknown = (await service.create(request({ model: 'gpt-4o-mini' })).catch((e: unknown) => e)) as ServiceError;
    expect(unknown.message).toContain('trainyard/tiny-chat');
    expect(unknown.message).not.toContain('gemma');
    expect(subjects()).not.toContain(Subjects.registry.createModel.name);
  });

  it('refuses a file that is not the caller’s as the data source names it', async () => {
    await expect(service.create(request({ training_file: 'file-theirs' }))).rejects.toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'training_file' } });
    expect(jobs.rows.size).toBe(0);
  });

  it('deletes the model it made when the job cannot be stored', async () => {
    jobs.repository.create = async () => {
      throw new ServiceError(ErrorCode.Unavailable, 'database down');
    };
    await expect(service.create(request())).rejects.toMatchObject({ code: ErrorCode.Unavailable });
    expect(calls.find((c) => c.subject === Subjects.registry.deleteModel.name)?.payload).toEqual({ ...CALLER, model_id: 'm-ft' });
  });
});
