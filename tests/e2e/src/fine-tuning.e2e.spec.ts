import type { TrainingJobRecord } from '@trainyard/contracts';
import { waitFor } from '@trainyard/testing';
import OpenAI, { toFile } from 'openai';
import type { FineTuningJob, FineTuningJobEvent } from 'openai/resources/fine-tuning/jobs/jobs';
import { Stack } from './support/stack';

// OpenAI's fine-tuning API as the openai SDK drives it, on the embedded model: a chat JSONL
// file uploaded with purpose fine-tune, a supervised job with its hyperparameters, its events
// and checkpoint, and its fine-tuned model answering through chat completions and Responses.
// Underneath it is one of our SFT jobs: the preview API shows the same job.

const BASE = 'trainyard/tiny-chat';

const line = (question: string, answer: string) => JSON.stringify({ messages: [{ role: 'system', content: 'Answer in one word.' }, { role: 'user', content: question }, { role: 'assistant', content: answer }] });
const TRAIN = [line('Capital of France?', 'Paris'), line('Capital of Italy?', 'Rome'), line('Capital of Spain?', 'Madrid'), line('Capital of Peru?', 'Lima')].join('\n') + '\n';
const VALID = line('Capital of Chile?', 'Santiago') + '\n';
const TERMINAL = ['succeeded', 'failed', 'cancelled'];

describe('fine-tuning jobs through the openai SDK', () => {
  let stack: Stack;
  let key: string;
  let client: OpenAI;
  let other: OpenAI;
  let trainingFile: string;
  let validationFile: string;
  let job: FineTuningJob;

  const until = (id: string, done: (job: FineTuningJob) => boolean, timeoutMs = 240_000) =>
    waitFor(
      async () => {
        const current = await client.fineTuning.jobs.retrieve(id);
        return done(current) && current;
      },
      { what: `fine-tuning job ${id}`, timeoutMs, intervalMs: 500 },
    );

  beforeAll(async () => {
    stack = await Stack.start({ env: { EMBEDDED_BASE_MODEL: BASE, MAX_COMPLETION_TOKENS: '16' } });
    key = (await stack.createKey('acme')).key;
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
    other = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: (await stack.createKey('globex')).key, maxRetries: 0 });
    trainingFile = (await client.files.create({ file: await toFile(Buffer.from(TRAIN), 'train.jsonl'), purpose: 'fine-tune' })).id;
    validationFile = (await client.files.create({ file: await toFile(Buffer.from(VALID), 'valid.jsonl'), purpose: 'fine-tune' })).id;
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  it('runs a supervised job to a fine-tuned model, with its events and its checkpoint', async () => {
    const hyperparameters = { n_epochs: 2, batch_size: 2, learning_rate_multiplier: 'auto' as const };
    job = await client.fineTuning.jobs.create({
      model: BASE,
      training_file: trainingFile,
      validation_file: validationFile,
      suffix: 'capitals',
      seed: 7,
      metadata: { team: 'geo' },
      method: { type: 'supervised', supervised: { hyperparameters } },
    });
    const resolved = { n_epochs: 2, batch_size: 2, learning_rate_multiplier: 1 };
    expect(job).toMatchObject({
      object: 'fine_tuning.job',
      id: expect.stringMatching(/^ftjob-[0-9a-f]{32}$/),
      model: BASE,
      organization_id: 'acme',
      training_file: trainingFile,
      validation_file: validationFile,
      seed: 7,
      metadata: { team: 'geo' },
      hyperparameters: resolved,
      method: { type: 'supervised', supervised: { hyperparameters: resolved } },
      fine_tuned_model: null,
      finished_at: null,
      error: null,
      result_files: [],
    });
    expect(['queued', 'running']).toContain(job.status);

    const done = await until(job.id, (j) => TERMINAL.includes(j.status));
    expect(done).toMatchObject({ status: 'succeeded', error: null, fine_tuned_model: expect.stringMatching(/^wandb-artifact:\/\/\/acme\/fine-tuning\/capitals-[0-9a-f]{32}:step1$/) });
    expect(done.trained_tokens).toBeGreaterThan(0);
    expect(done.finished_at).toBeGreaterThanOrEqual(done.created_at);

    // Newest first, page by page (two at a time): success, four steps (two epochs of two batches), start.
    const events: FineTuningJobEvent[] = [];
    for await (const event of client.fineTuning.jobs.listEvents(job.id, { limit: 2 })) events.push(event);
    expect(events.map((e) => e.type)).toEqual(['message', 'metrics', 'metrics', 'metrics', 'metrics', 'message']);
    expect(events[0]).toMatchObject({ object: 'fine_tuning.job.event', level: 'info', message: expect.stringContaining(done.fine_tuned_model as string) });
    expect(events.at(-1)?.message).toBe('Fine-tuning job started: 4 training steps');
    const steps = events.filter((e) => e.type === 'metrics').reverse();
    expect(steps.map((e) => (e.data as { step: number }).step)).toEqual([1, 2, 3, 4]);
    // The validation file's loss is measured at the end of each epoch.
    expect(steps.map((e) => typeof (e.data as { valid_loss?: number }).valid_loss === 'number')).toEqual([false, true, false, true]);
    for (const step of steps) expect((step.data as { train_loss: number }).train_loss).toBeGreaterThan(0);

    const checkpoints = await client.fineTuning.jobs.checkpoints.list(job.id);
    expect(checkpoints.data).toEqual([
      expect.objectContaining({
        object: 'fine_tuning.job.checkpoint',
        id: job.id.replace('ftjob-', 'ftckpt-'),
        fine_tuned_model_checkpoint: done.fine_tuned_model,
        fine_tuning_job_id: job.id,
        step_number: 4,
        metrics: { step: 4, train_loss: expect.any(Number), valid_loss: expect.any(Number), full_valid_loss: expect.any(Number) },
      }),
    ]);
    expect(checkpoints.has_more).toBe(false);

    // One store: the preview API shows the same SFT job, the same events.
    const uuid = job.id.slice('ftjob-'.length).replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');
    const preview = await stack.json<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${uuid}`, key);
    expect(preview).toMatchObject({ type: 'sft', status: 'succeeded', checkpoint_step: 1, fine_tuning: { suffix: 'capitals', seed: 7 } });
  }, 300_000);

  it('serves the fine-tuned model through chat completions and Responses at once', async () => {
    const model = (await client.fineTuning.jobs.retrieve(job.id)).fine_tuned_model as string;
    const chat = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'Capital of France?' }], max_tokens: 4 })
      .withResponse();
    expect(chat.response.headers.get('x-trainyard-checkpoint-step')).toBe('1');
    expect(typeof chat.data.choices[0].message.content).toBe('string');

    const response = await client.responses.create({ model, input: 'Capital of Italy?', max_output_tokens: 4 }).withResponse();
    expect(response.response.headers.get('x-trainyard-checkpoint-step')).toBe('1');
    expect(typeof response.data.output_text).toBe('string');
    expect((await client.models.retrieve(model)).id).toBe(model);
  }, 120_000);

  it('lists jobs newest first by metadata, and cancels a job that is queued or running', async () => {
    const long = await client.fineTuning.jobs.create({
      model: BASE,
      training_file: trainingFile,
      metadata: { team: 'sales' },
      hyperparameters: { n_epochs: 50, batch_size: 1 },
    });
    const cancelling = await client.fineTuning.jobs.cancel(long.id);
    expect(['cancelled', 'running']).toContain(cancelling.status);
    const cancelled = await until(long.id, (j) => TERMINAL.includes(j.status), 120_000);
    expect(cancelled).toMatchObject({ status: 'cancelled', fine_tuned_model: null, error: null });
    expect((await client.fineTuning.jobs.cancel(long.id)).status).toBe('cancelled');
    await expect(client.fineTuning.jobs.cancel(job.id)).rejects.toMatchObject({ status: 409 });
    expect(await client.fineTuning.jobs.checkpoints.list(long.id)).toMatchObject({ data: [], has_more: false });

    const all: string[] = [];
    for await (const j of client.fineTuning.jobs.list({ limit: 1 })) all.push(j.id);
    expect(all).toEqual([long.id, job.id]);
    expect((await client.fineTuning.jobs.list({ metadata: { team: 'geo' } })).data.map((j) => j.id)).toEqual([job.id]);
    expect((await client.fineTuning.jobs.list({ metadata: { team: 'nobody' } })).data).toEqual([]);
  }, 180_000);

  it('refuses a request it cannot run with a 400 naming the field, before any job is made', async () => {
    const bad = (await client.files.create({ file: await toFile(Buffer.from(`${line('a', 'b')}\n{"messages": [{"role": "user", "content": "no answer"}]}\n`), 'bad.jsonl'), purpose: 'fine-tune' })).id;
    const refusals: [Parameters<OpenAI['fineTuning']['jobs']['create']>[0], string, RegExp][] = [
      [{ model: BASE, training_file: bad }, 'training_file', /line 2 the last message must be from the assistant/],
      [{ model: BASE, training_file: trainingFile, validation_file: bad }, 'validation_file', /line 2/],
      [{ model: BASE, training_file: 'file-AAAAAAAAAAAAAAAAAAAAAAAA' }, 'training_file', /is not a file you uploaded/],
      [{ model: 'gpt-4o-mini', training_file: trainingFile }, 'model', new RegExp(`not a base model of this deployment.*${BASE}`)],
      [{ model: BASE, training_file: trainingFile, method: { type: 'dpo', dpo: {} } }, 'method.type', /"dpo" fine-tuning is not offered here/],
      [{ model: BASE, training_file: trainingFile, method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 0 } } } }, 'method.supervised.hyperparameters.n_epochs', /at least 1/],
    ];
    const before = (await client.fineTuning.jobs.list()).data.length;
    for (const [body, param, message] of refusals) {
      const err = (await client.fineTuning.jobs.create(body).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.param).toBe(param);
      expect(err.message).toMatch(message);
    }
    expect((await client.fineTuning.jobs.list()).data.length).toBe(before);
  }, 60_000);

  it("answers another entity's job, file and model exactly as ones that do not exist", async () => {
    const ghost = 'ftjob-00000000000040008000000000000000';
    const attempts: [string, (id: string) => Promise<unknown>][] = [
      ['retrieve', (id) => other.fineTuning.jobs.retrieve(id)],
      ['cancel', (id) => other.fineTuning.jobs.cancel(id)],
      ['events', (id) => other.fineTuning.jobs.listEvents(id)],
      ['checkpoints', (id) => other.fineTuning.jobs.checkpoints.list(id)],
    ];
    for (const [, attempt] of attempts) {
      const theirs = (await attempt(job.id).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      const missing = (await attempt(ghost).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(theirs).toBeInstanceOf(OpenAI.NotFoundError);
      expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
      expect(theirs.message.replace(job.id, '<id>')).toBe(missing.message.replace(ghost, '<id>'));
    }
    expect((await other.fineTuning.jobs.list()).data).toEqual([]);

    const theirFile = (await other.fineTuning.jobs.create({ model: BASE, training_file: trainingFile }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    const noFile = (await other.fineTuning.jobs.create({ model: BASE, training_file: 'file-AAAAAAAAAAAAAAAAAAAAAAAA' }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(theirFile.status).toBe(400);
    expect(theirFile.message.replace(trainingFile, '<id>')).toBe(noFile.message.replace('file-AAAAAAAAAAAAAAAAAAAAAAAA', '<id>'));

    const model = (await client.fineTuning.jobs.retrieve(job.id)).fine_tuned_model as string;
    await expect(other.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    await expect(other.responses.create({ model, input: 'hi', max_output_tokens: 1 })).rejects.toMatchObject({ status: 404 });
  }, 60_000);
});
