import type { CheckpointRecord, Page, TrainingEventRecord, TrainingJobRecord } from '@trainyard/contracts';
import { waitFor } from '@trainyard/testing';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { AppName, Stack } from './support/stack';

// SIGTERM to each app while it holds work: it takes no more, finishes what it can within
// SHUTDOWN_DRAIN_MS, fails the rest clearly or hands it back, and exits 0 within
// SHUTDOWN_TIMEOUT_MS. The bounds below are functional limits, not timing measurements.

const DRAIN_MS = 6_000;
const TIMEOUT_MS = 20_000;
const LONG = 16_000;

describe('graceful shutdown', () => {
  let stack: Stack;
  let key: string;
  let client: OpenAI;
  let longModel: string;
  let trainable: string;

  beforeAll(async () => {
    stack = await Stack.start({
      env: {
        SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
        SHUTDOWN_TIMEOUT_MS: String(TIMEOUT_MS),
        MAX_COMPLETION_TOKENS: '100000',
        WORKER_POLL_MS: '200',
        // The request loops below are far faster than any client; the per-key rate is not under test here.
        KEY_RATE_LIMIT_REQUESTS: '1000000',
      },
    });
    longModel = stack.addTinyModel('trainyard/tiny-long', 1, { maxPositionEmbeddings: 16_384 });
    trainable = stack.addTinyModel('trainyard/tiny-chat');
    key = (await stack.createKey('acme')).key;
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  // Whatever a test stopped is started again, whether the test passed or not.
  const stopped = new Set<AppName>();
  afterEach(async () => {
    for (const name of stopped) await stack.startApp(name);
    stopped.clear();
  }, 60_000);

  /** SIGTERM, and the exit code, which must come within the shutdown bound. */
  async function terminate(name: AppName): Promise<number | null> {
    stopped.add(name);
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${name} still running ${TIMEOUT_MS + 10_000} ms after SIGTERM`)), TIMEOUT_MS + 10_000);
    });
    try {
      return await Promise.race([stack.stopApp(name), bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A streamed completion, started and seen streaming; `done` settles with its text or its error. */
  async function streaming(maxTokens: number): Promise<{ done: Promise<{ text: string; finish: string | null } | { error: string }> }> {
    const stream = await client.chat.completions.create({
      model: longModel,
      messages: [{ role: 'user', content: 'Tell me about trains.' }],
      max_tokens: maxTokens,
      temperature: 0,
      stream: true,
    });
    const iterator = stream[Symbol.asyncIterator]();
    const first = await iterator.next();
    if (first.done) throw new Error('the stream ended at once');
    const done = (async () => {
      let text = '';
      let finish: string | null = null;
      try {
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
          text += next.value.choices[0]?.delta?.content ?? '';
          finish = next.value.choices[0]?.finish_reason ?? finish;
        }
        return { text, finish };
      } catch (err) {
        return { error: (err as Error).message };
      }
    })();
    return { done };
  }

  /** Whether a new TCP connection to the app's HTTP port is refused. */
  const refused = (url: string) =>
    fetch(url).then(
      () => false,
      () => true,
    );

  it('gateway: refuses new connections, finishes the stream it can, ends the one it cannot with a clear error, exits 0', async () => {
    const short = await streaming(24);
    const long = await streaming(LONG);

    const exit = terminate('gateway');
    await waitFor(() => refused(`${stack.baseUrl}/v1/health`), { what: 'the gateway to stop accepting connections', timeoutMs: 10_000, intervalMs: 50 });

    const finished = await short.done;
    expect(finished).toMatchObject({ finish: expect.stringMatching(/^(length|stop)$/) });
    const cut = await long.done;
    expect(cut).toEqual({ error: expect.stringMatching(/shutting down; retry/) });
    expect(await exit).toBe(0);

  }, 120_000);

  it('inference worker: stops taking completions, finishes the one it can, fails the one it cannot clearly, exits 0', async () => {
    const short = await streaming(24);
    const long = await streaming(LONG);

    const exit = terminate('inference-worker');
    // The chat service stops sending it work: a stopping worker is not ready.
    const turnedAway = await waitFor(
      async () => {
        const error = await client.chat.completions
          .create({ model: longModel, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }, { timeout: 2_000 })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        return error instanceof OpenAI.APIError && error.status === 503 && error;
      },
      { what: 'new completions to be turned away', timeoutMs: 15_000, intervalMs: 200 },
    );
    expect(turnedAway.message).toMatch(/No inference worker/);

    expect(await short.done).toMatchObject({ finish: expect.stringMatching(/^(length|stop)$/) });
    expect(await long.done).toEqual({ error: expect.stringMatching(/inference worker is shutting down/) });
    expect(await exit).toBe(0);

    await stack.startApp('inference-worker');
    stopped.delete('inference-worker');
    await waitFor(
      () => client.chat.completions.create({ model: longModel, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }, { timeout: 5_000 }).catch(() => undefined),
      { what: 'completions again', timeoutMs: 30_000, intervalMs: 300 },
    );
  }, 120_000);

  it('training worker: hands its job back unacknowledged, exits 0; a restarted worker completes it exactly once', async () => {
    const call = <T>(method: string, path: string, body?: unknown) => stack.call<T>(method, path, { key, body });
    const model = (await call<{ id: string }>('POST', '/v1/preview/models', { entity: null, project: 'shutdown', name: 'agent', base_model: trainable, return_existing: true })).body;
    const newestStep = async () =>
      (await call<Page<CheckpointRecord>>('GET', `/v1/preview/models/${model.id}/checkpoints?limit=1&order=desc`)).body.data[0].step;
    const before = await newestStep();

    // Many one-conversation steps: long enough to be caught mid-way.
    const lines = Array.from({ length: 400 }, (_, i) => JSON.stringify({ messages: [{ role: 'user', content: `Say ${i}.` }, { role: 'assistant', content: `${i}` }] }));
    const form = new FormData();
    form.append('purpose', 'fine-tune');
    form.append('file', new Blob([lines.join('\n')]), 'data.jsonl');
    const file = (await (await stack.fetch('/v1/files', { method: 'POST', key, body: form })).json()) as { id: string };
    const job = await call<{ id: string }>('POST', '/v1/preview/sft-training-jobs', {
      model_id: model.id,
      training_data_url: file.id,
      config: { batch_size: 1, learning_rate: 1e-4 },
    });
    expect(job.status).toBe(200);
    const jobId = job.body.id;
    const events = async () => (await call<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${jobId}/events?limit=100`)).body;
    await waitFor(async () => (await events()).data.some((e) => e.type === 'gradient_step'), { what: 'the job to be training', timeoutMs: 60_000 });

    expect(await terminate('training-worker')).toBe(0);
    // Handed back, not finished and not failed: the job waits for a worker.
    const held = (await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${jobId}`)).body;
    expect(held.status).toBe('running');
    expect(await newestStep()).toBe(before);

    await stack.startApp('training-worker');
    stopped.delete('training-worker');
    const record = await waitFor(
      async () => {
        const current = (await call<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${jobId}`)).body;
        return ['succeeded', 'failed', 'cancelled'].includes(current.status) && current;
      },
      { what: 'the job to finish on the restarted worker', timeoutMs: 240_000, intervalMs: 500 },
    );
    expect(record).toMatchObject({ status: 'succeeded', checkpoint_step: before + 1 });
    expect(await newestStep()).toBe(before + 1);

    const all: TrainingEventRecord[] = [];
    for (let after: string | undefined; ; ) {
      const page = (await call<Page<TrainingEventRecord>>('GET', `/v1/preview/training-jobs/${jobId}/events?limit=100${after ? `&after=${after}` : ''}`)).body;
      all.push(...page.data);
      after = page.last_id ?? undefined;
      if (!page.has_more) break;
    }
    const types = all.map((e) => e.type);
    expect(types.filter((t) => t === 'training_started')).toHaveLength(1);
    expect(types.filter((t) => t === 'training_ended')).toHaveLength(1);
    expect(types.filter((t) => t === 'gradient_step')).toHaveLength(all[0].data['num_sequences'] as number);
    // The orchestrator saw the message come back (it was never acknowledged) and restarted the job.
    const orchestratorLog = readFileSync(join(stack.logDir, 'training-orchestrator.log'), 'utf8');
    expect(orchestratorLog).toContain(`Restarting job ${jobId}`);
  }, 420_000);

  it.each([
    ['model-registry', 'GET', '/v1/preview/base-models'],
    ['chat', 'POST', '/v1/chat/completions'],
    ['training-orchestrator', 'GET', '/v1/preview/training-jobs/00000000-0000-4000-8000-000000000000'],
  ] as const)('%s: answers the requests it holds, turns new ones away with 503, exits 0', async (name, method, path) => {
    const body = method === 'POST' ? { model: longModel, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 } : undefined;
    const statuses: number[] = [];
    let stop = false;
    // A steady stream of requests through the gateway to the app being stopped.
    const load = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!stop) statuses.push((await stack.call(method, path, { key, body })).status);
      }),
    );
    try {
      await waitFor(() => statuses.length >= 8, { what: 'requests to flow', timeoutMs: 30_000 });
      const exit = terminate(name);
      await waitFor(() => statuses.includes(503), { what: `requests to be turned away from ${name}`, timeoutMs: 15_000, intervalMs: 50 });
      expect(await exit).toBe(0);
    } finally {
      stop = true;
      await load;
    }

    // Served (or, for a model that does not exist, a clean 404) until it stopped; 503 after; never a 500 or a timeout.
    const served = name === 'training-orchestrator' ? 404 : 200;
    expect(statuses).toContain(served);
    expect(statuses.filter((s) => s !== served && s !== 503)).toEqual([]);
  }, 120_000);

  it('health: exits 0 on SIGTERM while system checks run', async () => {
    const checks = Promise.all(Array.from({ length: 4 }, () => stack.fetch('/v1/system-check').then((r) => r.status)));
    expect(await terminate('health')).toBe(0);
    for (const status of await checks) expect([200, 503]).toContain(status);
  }, 60_000);
});
