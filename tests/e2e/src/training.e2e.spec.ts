import type { CheckpointRecord, Page, TrainingEventRecord, TrainingJobRecord } from '@trainyard/contracts';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { JsonReply, Stack } from './support/stack';

// Training jobs through the whole stack, driven the way OpenPipe ART's client drives them:
// rollouts with the official openai client, RL and SFT jobs, events polled every second,
// the new checkpoint served at once. Tiny model on wasm, few small groups.

type Reply<T = Record<string, unknown>> = JsonReply<T>;

interface Trajectory {
  messages_and_choices: unknown[];
  reward: number;
}

const BASE = 'trainyard/tiny-chat';

describe('training jobs, end to end', () => {
  let stack: Stack;
  let key: string;
  let otherKey: string;
  let client: OpenAI;
  let model: { id: string; entity: string; project: string; name: string };
  let modelName: string;
  let rollouts: Trajectory[];

  beforeAll(async () => {
    // The SFT data server of these tests listens on loopback, which only the allow list opens.
    stack = await Stack.start({ env: { MAX_CHOICES: '4', MAX_COMPLETION_TOKENS: '64', SFT_DATA_ALLOWED_HOSTS: '127.0.0.1' } });
    stack.addTinyModel(BASE);
    key = (await stack.createKey('acme')).key;
    otherKey = (await stack.createKey('globex')).key;
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const call = <T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, as = key): Promise<Reply<T>> =>
    stack.call<T>(method, path, { key: as, body, headers });

  const newestStep = async (modelId = model.id) =>
    (await call<Page<CheckpointRecord>>('GET', `/v1/preview/models/${modelId}/checkpoints?limit=1&order=desc`)).body.data[0].step;

  /** As ART's client does: GET events?after=<last id> every second until the job's final event. */
  async function waitForEnd(jobId: string, timeoutMs = 180_000): Promise<TrainingEventRecord[]> {
    const events: TrainingEventRecord[] = [];
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const after = events.at(-1)?.id;
      const { status, body } = await call<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${jobId}/events${after ? `?after=${after}` : ''}`);
      expect(status).toBe(200);
      events.push(...body.data);
      if (events.some((e) => e.type === 'training_ended' || e.type === 'training_failed')) return events;
      if (!body.has_more) await new Promise((r) => setTimeout(r, 1_000));
    }
    throw new Error(`job ${jobId} did not end in time; events: ${JSON.stringify(events)}`);
  }

  async function waitForEvent(jobId: string, type: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      const { body } = await call<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${jobId}/events?limit=100`);
      if (body.data.some((e) => e.type === type)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no ${type} event for job ${jobId}`);
  }

  async function waitForStatus(jobId: string, statuses: string[]): Promise<TrainingJobRecord> {
    for (let i = 0; i < 1_800; i++) {
      const { body } = await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${jobId}`);
      if (statuses.includes(body.status)) return body;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`job ${jobId} never reached ${statuses.join('/')}`);
  }

  /** One rollout: the chat messages and the Choice exactly as the openai client returned it. */
  async function rollout(prompt: string, index: number): Promise<Trajectory> {
    const messages = [{ role: 'user' as const, content: prompt }];
    const completion = await client.chat.completions.create({
      model: modelName,
      messages,
      max_tokens: 12,
      temperature: 1,
      logprobs: true,
      // @ts-expect-error ART's extension, sent as an extra body field
      return_token_ids: true,
    });
    const choice = completion.choices[0];
    // A reward the tiny model can move: shorter answers are better (the index only breaks ties).
    return { messages_and_choices: [...messages, choice], reward: -(choice.message.content ?? '').length / 10 + index / 1000 };
  }

  /** Groups for a long job: the same rollouts many times, each history its own gradient step. */
  const lp0 = (c: OpenAI.ChatCompletion) => (c.choices[0].logprobs?.content ?? []).map((e) => e.logprob);
  const longGroups = (copies: number) =>
    Array.from({ length: copies }, (_, g) => ({ trajectories: rollouts.map((t, i) => ({ ...t, reward: (i + g) % 3 })) }));

  it('runs the ART RL loop: model, rollouts, RL job, events, the new step served at once', async () => {
    const created = await call<typeof model>('POST', '/v1/preview/models', { entity: null, project: 'art', name: 'agent', base_model: BASE, return_existing: true });
    expect(created.status).toBe(200);
    model = created.body;
    modelName = `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;
    const start = await newestStep();
    expect(start).toBe(0);

    const groups = [];
    for (const prompt of ['Count to three.', 'Name a colour.']) {
      groups.push({ trajectories: await Promise.all([0, 1, 2, 3].map((i) => rollout(prompt, i))) });
    }
    rollouts = groups.flatMap((g) => g.trajectories);

    const idempotencyKey = randomUUID();
    const body = { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 1e-3 } };
    const job = await call<{ id: string }>('POST', '/v1/preview/training-jobs', body, { 'idempotency-key': idempotencyKey });
    expect(job.status).toBe(200);
    const retried = await call<{ id: string }>('POST', '/v1/preview/training-jobs', body, { 'idempotency-key': idempotencyKey });
    expect(retried.body.id).toBe(job.body.id);

    const events = await waitForEnd(job.body.id);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('training_started');
    expect(types.at(-1)).toBe('training_ended');
    const numSequences = events[0].data['num_sequences'] as number;
    expect(numSequences).toBeGreaterThan(0);
    const steps = events.filter((e) => e.type === 'gradient_step');
    expect(steps).toHaveLength(numSequences);
    for (const step of steps) for (const value of Object.values(step.data)) expect(typeof value).toBe('number');

    // The moment training_ended is seen, the new step is listed and served.
    expect(await newestStep()).toBe(start + 1);
    // The new checkpoint carries the job's metrics: each gradient-step metric's mean.
    const newest = (await call<Page<CheckpointRecord>>('GET', `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`)).body.data[0];
    const meanOf = (name: string) => steps.reduce((sum, e) => sum + (e.data[name] as number), 0) / steps.length;
    expect(newest.metrics['training/loss']).toBeCloseTo(meanOf('loss'), 5);
    expect(newest.metrics['training/reward']).toBeCloseTo(meanOf('reward'), 5);
    expect(typeof newest.metrics['training/grad_norm']).toBe('number');
    const record = await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${job.body.id}`);
    expect(record.body).toMatchObject({ id: job.body.id, object: 'training_job', type: 'rl', model_id: model.id, status: 'succeeded', checkpoint_step: 1, error_message: null, attempts: 1 });
    // An RL job's trained tokens are its gradient steps' tokens, prompts and completions.
    expect(record.body.trained_tokens).toBe(steps.reduce((sum, e) => sum + (e.data['num_tokens'] as number), 0));
    expect(record.body.trained_tokens).toBeGreaterThan(meanOf('num_trainable_tokens') * steps.length);
    const { response } = await client.chat.completions
      .create({ model: `${modelName}:step1`, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 })
      .withResponse();
    expect(response.headers.get('x-trainyard-checkpoint-step')).toBe('1');

    // Step 1, step 0 and the base model share one batch on the worker, each row with its own
    // adapter: every answer is the one it gets alone.
    const targets = [`${modelName}:step1`, `${modelName}:step0`, BASE];
    const seeded = (name: string) =>
      client.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'Name a colour.' }], max_tokens: 12, seed: 5, temperature: 1, logprobs: true });
    const aloneAnswers: OpenAI.ChatCompletion[] = [];
    for (const name of targets) aloneAnswers.push(await seeded(name));
    const together = await Promise.all([...targets, ...targets].map(seeded));
    together.forEach((answer, i) => {
      const want = aloneAnswers[i % targets.length];
      expect(answer.choices[0].message.content).toBe(want.choices[0].message.content);
      expect(lp0(answer)).toHaveLength(lp0(want).length);
      lp0(answer).forEach((value, t) => expect(Math.abs(value - lp0(want)[t])).toBeLessThan(1e-3));
    });
    // The trained step answers differently from the base model, so the check above can fail.
    expect(lp0(aloneAnswers[2]).length).toBeGreaterThan(0);
    expect(lp0(aloneAnswers[0])).not.toEqual(lp0(aloneAnswers[2]));

    const deleted = await call<{ deleted_count: number }>('DELETE', `/v1/preview/models/${model.id}/checkpoints`, { steps: [0] });
    expect(deleted.body.deleted_count).toBe(1);
  }, 300_000);

  it('streams the same events as Server-Sent Events, resuming from Last-Event-ID', async () => {
    const job = await call<{ id: string }>('POST', '/v1/preview/training-jobs', { model_id: model.id, trajectory_groups: longGroups(1) });
    const res = await stack.fetch(`/v1/preview/training-jobs/${job.body.id}/events`, { key, headers: { accept: 'text/event-stream' } });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const text = await res.text();
    const ids = [...text.matchAll(/^id: (.+)$/gm)].map((m) => m[1]);
    const types = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(types[0]).toBe('training_started');
    expect(types.at(-1)).toBe('training_ended');
    const all = await call<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${job.body.id}/events?limit=100`);
    expect(ids).toEqual(all.body.data.map((e) => e.id));

    const resumed = await stack.fetch(`/v1/preview/training-jobs/${job.body.id}/events`, { key, headers: { accept: 'text/event-stream', 'last-event-id': ids[0] } });
    expect([...(await resumed.text()).matchAll(/^id: (.+)$/gm)].map((m) => m[1])).toEqual(ids.slice(1));
  }, 300_000);

  it('runs an SFT job from an uploaded JSONL file', async () => {
    const before = await newestStep();
    const lines = ['Say hi.', 'Say bye.', 'Say yes.'].map((q) =>
      JSON.stringify({ messages: [{ role: 'user', content: q }, { role: 'assistant', content: 'ok' }] }),
    );
    const form = new FormData();
    form.append('purpose', 'fine-tune');
    form.append('file', new Blob([lines.join('\n')]), 'data.jsonl');
    const upload = await stack.fetch('/v1/files', { method: 'POST', key, body: form });
    expect(upload.status).toBe(200);
    const file = (await upload.json()) as { id: string };

    const job = await call<{ id: string }>('POST', '/v1/preview/sft-training-jobs', {
      model_id: model.id,
      training_data_url: file.id,
      config: { batch_size: 2, learning_rate: 1e-3 },
    });
    expect(job.status).toBe(200);
    const events = await waitForEnd(job.body.id);
    expect(events[0]).toMatchObject({ type: 'training_started', data: { num_sequences: 2 } });
    expect(events.filter((e) => e.type === 'gradient_step')).toHaveLength(2);
    expect(events.at(-1)?.type).toBe('training_ended');
    expect(await newestStep()).toBe(before + 1);
    expect((await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${job.body.id}`)).body).toMatchObject({ type: 'sft', status: 'succeeded' });

    // The same data from an http(s) URL the cluster can reach.
    const server = createServer((_, res) => res.end(lines.join('\n')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/data.jsonl`;
      const fromUrl = await call<{ id: string }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id, training_data_url: url });
      expect(fromUrl.status).toBe(200);
      expect((await waitForEnd(fromUrl.body.id)).at(-1)?.type).toBe('training_ended');
      expect(await newestStep()).toBe(before + 2);
    } finally {
      server.close();
    }
  }, 300_000);

  it('runs the examples users start from (RL loop and SFT)', async () => {
    const env = { PATH: process.env['PATH'] ?? '', TRAINYARD_BASE_URL: `${stack.baseUrl}/v1`, TRAINYARD_API_KEY: key, ITERATIONS: '1' };
    const root = join(__dirname, '../../..');
    const tsx = join(root, 'node_modules/.bin/tsx');
    const rl = await promisify(execFile)(tsx, [join(root, 'examples/rl-loop.ts')], { env, cwd: root });
    expect(rl.stdout).toMatch(/training_started/);
    expect(rl.stdout).toMatch(/training_ended/);
    expect(rl.stdout).toMatch(/step 1 says/);
    const sft = await promisify(execFile)(tsx, [join(root, 'examples/sft.ts')], { env, cwd: root });
    expect(sft.stdout).toMatch(/training_ended/);
    expect(sft.stdout).toMatch(/:step1 says/);
  }, 300_000);

  it('refuses bad requests before queueing, naming the problem', async () => {
    const rl = (fields: Record<string, unknown>, as = key) =>
      call<{ detail: unknown }>('POST', '/v1/preview/training-jobs', { model_id: model.id, trajectory_groups: [], ...fields }, {}, as);

    const unknown = await rl({ model_id: randomUUID() });
    expect(unknown.status).toBe(404);
    expect(JSON.stringify(unknown.body.detail)).toMatch(/not found/i);

    const foreign = await rl({}, otherKey);
    expect(foreign.status).toBe(404);

    const unimplemented = await rl({ experimental_config: { learning_rate: 1e-5, plot_tensors: true } });
    expect(unimplemented.status).toBe(422);
    expect(JSON.stringify(unimplemented.body.detail)).toContain('plot_tensors');

    const noTokens = await rl({ trajectory_groups: [{ trajectories: [{ messages_and_choices: [{ index: 0, message: { role: 'assistant', content: 'x' }, finish_reason: 'stop' }], reward: 1 }] }] });
    expect(noTokens.status).toBe(422);
    expect(JSON.stringify(noTokens.body.detail)).toContain('trajectory_groups[0].trajectories[0].messages_and_choices[0]');

    const form = new FormData();
    form.append('purpose', 'fine-tune');
    const good = JSON.stringify({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }] });
    form.append('file', new Blob([`${good}\n{"messages": [{"role": "user", "content": "no answer"}]}\n`]), 'bad.jsonl');
    const file = (await (await stack.fetch('/v1/files', { method: 'POST', key, body: form })).json()) as { id: string };
    const badLine = await call<{ detail: unknown }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id, training_data_url: file.id });
    expect(badLine.status).toBe(422);
    expect(JSON.stringify(badLine.body.detail)).toContain('line 2');

    const unreachable = await call<{ detail: string }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id, training_data_url: 'http://127.0.0.1:9/data.jsonl' });
    expect(unreachable.status).toBe(400);
    expect(unreachable.body.detail).toContain('http://127.0.0.1:9/data.jsonl');

    // This stack has no W&B credentials: a W&B artifact is a 400 that says what to configure.
    const artifact = await call<{ detail: string }>('POST', '/v1/preview/sft-training-jobs', { model_id: model.id, training_data_url: `wandb-artifact:///${model.entity}/${model.project}/data:v0` });
    expect(artifact.status).toBe(400);
    expect(artifact.body.detail).toMatch(/WANDB_API_KEY/);

    const missing = await call('GET', `/v1/preview/training-jobs/${randomUUID()}`);
    expect(missing.status).toBe(404);
  }, 120_000);

  it('cancels a queued job at once and a running job between steps, with no checkpoint', async () => {
    const before = await newestStep();
    // Long enough that the first job is still running when both cancels arrive, whatever the
    // machine: were it done, the worker would already hold the second.
    const long = { model_id: model.id, trajectory_groups: longGroups(24), experimental_config: { packed_sequence_length: 1 } };
    const running = await call<{ id: string }>('POST', '/v1/preview/training-jobs', long);
    const queued = await call<{ id: string }>('POST', '/v1/preview/training-jobs', long);
    await waitForEvent(running.body.id, 'training_started');

    const cancelledQueued = await call<TrainingJobRecord>('POST', `/v1/preview/training-jobs/${queued.body.id}/cancel`);
    expect(cancelledQueued.status).toBe(200);
    expect(cancelledQueued.body.status).toBe('cancelled');

    const cancelRunning = await call<TrainingJobRecord>('POST', `/v1/preview/training-jobs/${running.body.id}/cancel`);
    expect(cancelRunning.status).toBe(200);
    const final = await waitForStatus(running.body.id, ['cancelled', 'succeeded', 'failed']);
    expect(final.status).toBe('cancelled');
    const events = await waitForEnd(running.body.id);
    expect(events.at(-1)).toMatchObject({ type: 'training_failed' });
    expect(await newestStep()).toBe(before);
    expect((await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${queued.body.id}`)).body.status).toBe('cancelled');
  }, 300_000);

  it('survives a training worker killed mid-job: the job succeeds once, with one new checkpoint', async () => {
    const before = await newestStep();
    const job = await call<{ id: string }>('POST', '/v1/preview/training-jobs', {
      model_id: model.id,
      trajectory_groups: longGroups(16),
      experimental_config: { packed_sequence_length: 1 },
    });
    await waitForEvent(job.body.id, 'gradient_step');
    await stack.killApp('training-worker');
    // The scenario under test: the worker died holding an unfinished job.
    expect((await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${job.body.id}`)).body.status).toBe('running');
    await stack.startApp('training-worker');

    const events = await waitForEnd(job.body.id, 240_000);
    expect(events.at(-1)?.type).toBe('training_ended');
    const numSequences = events.find((e) => e.type === 'training_started')?.data['num_sequences'];
    expect(events.filter((e) => e.type === 'gradient_step')).toHaveLength(numSequences as number);
    expect(events.filter((e) => e.type === 'training_started')).toHaveLength(1);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(await newestStep()).toBe(before + 1);
    const record = (await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${job.body.id}`)).body;
    expect(record).toMatchObject({ status: 'succeeded', checkpoint_step: before + 1 });
  }, 300_000);
});
