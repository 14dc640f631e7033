import { readBundle } from '@trainyard/artifacts';
import { CheckpointRecord, Page, Subjects, TrainingEventRecord, TrainingJobRecord, WorkerAnnouncement } from '@trainyard/contracts';
import { TestNatsServer, waitFor } from '@trainyard/testing';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, JSONCodec } from 'nats';
import { sseBlocks } from './sse';
import { AppName, NatsUnderTest, Stack } from './stack';

// What the fault tests share: chat traffic that records how every request ended, training
// jobs on the tiny model, and the checks that nothing was lost, doubled or half-written.

/** No chat request may take longer than this: past it, it hung. Generous on purpose: it is not a speed test. */
export const REQUEST_BOUND_MS = 90_000;

export const BASE_MODEL = 'trainyard/tiny-chat';

/** Tokens of the long completions: generation takes several seconds, so the fault lands mid-way. */
export const LONG_TOKENS = 1_500;

/** The OpenAI error envelope, from a response body or from the last event of a stream. */
export interface OpenAiError {
  message: string;
  type: string;
  param?: string | null;
  code: string | null;
}

export interface ChatOutcome {
  stream: boolean;
  startedAt: number;
  endedAt?: number;
  /** HTTP status; 200 for a stream that opened (its error, if any, is in `error`). */
  status?: number;
  error?: OpenAiError;
  /** Checkpoint step that served it (`x-trainyard-checkpoint-step`). */
  step?: string | null;
  /** The `Retry-After` header of a refusal. */
  retryAfter?: string | null;
  /** No answer within REQUEST_BOUND_MS, or the connection broke: both are failures of the test. */
  broken?: string;
}

export interface ChatRequestOptions {
  model: string;
  maxTokens: number;
  stream?: boolean;
  temperature?: number;
  prompt?: string;
}

/** One chat completion through the HTTP API, recording how it ended; `started` resolves at the first streamed event. */
export function chatRequest(stack: Stack, key: string, options: ChatRequestOptions): { outcome: ChatOutcome; done: Promise<ChatOutcome>; started: Promise<void> } {
  const stream = options.stream ?? false;
  const outcome: ChatOutcome = { stream, startedAt: Date.now() };
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const done = (async () => {
    try {
      const res = await stack.fetch('/v1/chat/completions', {
        method: 'POST',
        key,
        signal: AbortSignal.timeout(REQUEST_BOUND_MS),
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: options.model,
          messages: [{ role: 'user', content: options.prompt ?? 'Tell me a story.' }],
          max_tokens: options.maxTokens,
          temperature: options.temperature ?? 1,
          stream,
        }),
      });
      outcome.status = res.status;
      outcome.step = res.headers.get('x-trainyard-checkpoint-step');
      outcome.retryAfter = res.headers.get('retry-after');
      if (!stream || res.status !== 200) {
        const body = (await res.json()) as { error?: OpenAiError; choices?: unknown[] };
        if (res.status !== 200) outcome.error = body.error ?? { message: JSON.stringify(body), type: 'none', code: null };
        else if (!Array.isArray(body.choices) || body.choices.length !== 1) outcome.broken = `no choices in ${JSON.stringify(body)}`;
        return outcome;
      }
      await readStream(res, outcome, markStarted);
    } catch (err) {
      outcome.broken = (err as Error).name === 'TimeoutError' ? `no answer within ${REQUEST_BOUND_MS} ms` : (err as Error).message;
    } finally {
      outcome.endedAt = Date.now();
      markStarted();
    }
    return outcome;
  })();
  return { outcome, done, started };
}

async function readStream(res: Response, outcome: ChatOutcome, markStarted: () => void): Promise<void> {
  let finished = false;
  for await (const block of sseBlocks(res.body as ReadableStream<Uint8Array>)) {
    const line = block.trim();
    if (!line.startsWith('data: ')) continue;
    const data = line.slice('data: '.length);
    if (data === '[DONE]') {
      finished = true;
      continue;
    }
    const event = JSON.parse(data) as { error?: OpenAiError; choices?: { delta?: { content?: string } }[] };
    if (event.error) outcome.error = event.error;
    else if (event.choices?.[0]?.delta?.content) markStarted();
  }
  if (!finished && !outcome.error) outcome.broken = 'the stream ended without [DONE] or an error';
}

/**
 * A 503 (with Retry-After) or 504 in the OpenAI envelope, saying what happened; for a stream
 * already open, a last error event with code unavailable or timeout.
 */
export function isCleanFailure(outcome: ChatOutcome): boolean {
  if (outcome.broken || !outcome.error) return false;
  const { error } = outcome;
  const coded = typeof error.message === 'string' && error.message.length > 0 && error.type === 'server_error';
  if (outcome.stream && outcome.status === 200) return coded && (error.code === 'unavailable' || error.code === 'timeout');
  if (outcome.status === 503) return coded && error.code === 'unavailable' && Number(outcome.retryAfter) > 0;
  return coded && outcome.status === 504 && error.code === 'timeout';
}

export function isSuccess(outcome: ChatOutcome): boolean {
  return outcome.status === 200 && !outcome.error && !outcome.broken;
}

/** Every request ended within the bound, either answered or with a clean 503/504: never a hang, a 500 or a broken connection. */
export function expectSettled(outcomes: ChatOutcome[]): void {
  const bad = outcomes.filter((o) => !isSuccess(o) && !isCleanFailure(o));
  expect(bad).toEqual([]);
  for (const o of outcomes) expect(o.endedAt).toBeDefined();
}

/**
 * Chat requests sent back to back by a few clients, as an application would while the fault
 * happens. Every request is recorded; `inFlight()` is what was unanswered at a moment.
 */
export class ChatTraffic {
  readonly outcomes: ChatOutcome[] = [];
  private readonly pending = new Set<ChatOutcome>();
  private running = true;
  private readonly loops: Promise<void>[];
  private paused?: { promise: Promise<void>; resume: () => void };

  constructor(
    private readonly stack: Stack,
    private readonly key: string,
    private readonly request: ChatRequestOptions,
    clients = 2,
  ) {
    this.loops = Array.from({ length: clients }, () => this.loop());
  }

  /** Requests sent and not yet answered, as of now. */
  inFlight(): ChatOutcome[] {
    return [...this.pending];
  }

  /** Requests started after `since`. */
  since(since: number): ChatOutcome[] {
    return this.outcomes.filter((o) => o.startedAt >= since);
  }

  async stop(): Promise<ChatOutcome[]> {
    this.running = false;
    this.resume();
    await Promise.all(this.loops);
    return this.outcomes;
  }

  /** Sends nothing new until resume(); resolves once nothing is in flight. */
  async pause(): Promise<void> {
    if (!this.paused) {
      let resume: () => void = () => undefined;
      const promise = new Promise<void>((resolve) => (resume = resolve));
      this.paused = { promise, resume };
    }
    await waitFor(() => this.pending.size === 0, { what: 'chat traffic to pause', timeoutMs: REQUEST_BOUND_MS });
  }

  resume(): void {
    this.paused?.resume();
    this.paused = undefined;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      if (this.paused) {
        await this.paused.promise;
        continue;
      }
      const { outcome, done } = chatRequest(this.stack, this.key, this.request);
      this.outcomes.push(outcome);
      this.pending.add(outcome);
      await done;
      this.pending.delete(outcome);
      // A refused request comes back at once: do not turn an outage into a busy loop.
      await sleep(isSuccess(outcome) ? 20 : 250);
    }
  }
}

/** Waits until a new chat request succeeds (the part is back), failing if none does in time. */
export async function waitForChat(stack: Stack, key: string, model: string, what: string): Promise<ChatOutcome> {
  return waitFor(
    async () => {
      const outcome = await chatRequest(stack, key, { model, maxTokens: 4 }).done;
      return isSuccess(outcome) && outcome;
    },
    { what, timeoutMs: 60_000, intervalMs: 500 },
  );
}

/** Sequences the inference workers are generating, as they report it on the ping subject. */
export async function inferenceWorkersActive(stack: Stack): Promise<number> {
  const nc = await connect({ servers: stack.nats.url });
  try {
    const codec = JSONCodec<WorkerAnnouncement>();
    let active = 0;
    for await (const reply of await nc.requestMany(Subjects.workers.ping.name, undefined, { maxWait: 500 })) {
      const worker = codec.decode(reply.data);
      if (worker.kind === 'inference') active += worker.capacity.active;
    }
    return active;
  } finally {
    await nc.close();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Process ids of every app but the ones named: after the fault they must be the same processes. */
export function pidsExcept(stack: Stack, apps: readonly AppName[], ...except: AppName[]): Map<AppName, number | undefined> {
  return new Map(apps.filter((a) => !except.includes(a)).map((a) => [a, stack.pid(a)]));
}

export const ALL_APPS: readonly AppName[] = [
  'gateway',
  'chat',
  'model-registry',
  'training-orchestrator',
  'health',
  'inference-worker',
  'training-worker',
];

// Training

export interface TrainableModel {
  id: string;
  name: string;
}

export async function createModel(stack: Stack, key: string, name: string): Promise<TrainableModel> {
  const model = await stack.json<{ id: string; entity: string; project: string; name: string }>('POST', '/v1/preview/models', key, {
    entity: null,
    project: 'faults',
    name,
    base_model: BASE_MODEL,
    return_existing: true,
  });
  return { id: model.id, name: `wandb-artifact:///${model.entity}/${model.project}/${model.name}` };
}

/** Lines of the SFT dataset: with batch_size 1, gradient steps of a job (long enough for a fault to land mid-job). */
/**
 * Lines of the faults' SFT dataset, one gradient step each: enough steps on the tiny model that
 * the job is still training when a fault lands (the time from its second step to the kill is a
 * few seconds of chat traffic being set up), with room for faster training steps.
 */
export const SFT_LINES = 120;

/** An SFT dataset of `lines` conversations, uploaded once; with batch_size 1 a job on it makes one gradient step per line. */
export async function uploadSftData(stack: Stack, key: string, lines: number): Promise<string> {
  const text = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({
      messages: [
        { role: 'user', content: `Question ${i}: what comes after ${i}? Answer with a short sentence.` },
        { role: 'assistant', content: `After ${i} comes ${i + 1}, and then ${i + 2}; counting on is easy.` },
      ],
    }),
  ).join('\n');
  const form = new FormData();
  form.append('purpose', 'fine-tune');
  form.append('file', new Blob([text]), 'faults.jsonl');
  const res = await stack.fetch('/v1/files', { method: 'POST', key, body: form });
  if (res.status !== 200) throw new Error(`upload failed: HTTP ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

export async function startSftJob(stack: Stack, key: string, model: TrainableModel, fileId: string): Promise<string> {
  const job = await stack.json<{ id: string }>('POST', '/v1/preview/sft-training-jobs', key, {
    model_id: model.id,
    training_data_url: fileId,
    config: { batch_size: 1, learning_rate: 1e-3 },
  });
  return job.id;
}

/** Every event of a job, oldest first, read page by page as a client does. */
export async function jobEvents(stack: Stack, key: string, jobId: string, limit = 100): Promise<TrainingEventRecord[]> {
  const events: TrainingEventRecord[] = [];
  for (;;) {
    const after = events.at(-1)?.id;
    const page = await stack.json<Page<TrainingEventRecord>>(
      'GET',
      `/v1/preview/training-jobs/${jobId}/events?limit=${limit}${after ? `&after=${after}` : ''}`,
      key,
    );
    events.push(...page.data);
    if (!page.has_more) return events;
  }
}

/** Resolves once the job has reported at least `count` gradient steps. */
export async function waitForSteps(stack: Stack, key: string, jobId: string, count: number): Promise<void> {
  await waitFor(async () => (await jobEvents(stack, key, jobId)).filter((e) => e.type === 'gradient_step').length >= count, {
    what: `${count} gradient steps of job ${jobId}`,
    timeoutMs: 120_000,
    intervalMs: 250,
  });
}

/** Resolves with the job once it is finished; the API must answer throughout. */
export async function waitForJobEnd(stack: Stack, key: string, jobId: string): Promise<TrainingJobRecord> {
  let last: TrainingJobRecord | undefined;
  try {
    return await waitFor(
      async () => {
        last = await stack.json<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${jobId}`, key);
        return ['succeeded', 'failed', 'cancelled'].includes(last.status) && last;
      },
      { what: `job ${jobId} to end`, timeoutMs: 300_000, intervalMs: 500 },
    );
  } catch (err) {
    // What a reader of CI output needs to tell why: the job as last seen, and every log line naming it.
    const mentions = ALL_APPS.flatMap((app) => stack.readLog(app).split('\n').filter((line) => line.includes(jobId)).map((line) => `${app}: ${line}`));
    throw new Error(`${(err as Error).message}\nlast seen: ${JSON.stringify(last)}\nlog lines naming it:\n${mentions.join('\n')}`);
  }
}

/**
 * Follows a job's events as Server-Sent Events the way a client does: on a refused or broken
 * stream it waits a second and resumes from Last-Event-ID, until the job's final event.
 * Resolves with the ids received, in order.
 */
export async function followJobEvents(stack: Stack, key: string, jobId: string, stop: AbortSignal): Promise<string[]> {
  const ids: string[] = [];
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline && !stop.aborted) {
    try {
      const res = await stack.fetch(`/v1/preview/training-jobs/${jobId}/events`, {
        key,
        headers: { accept: 'text/event-stream', ...(ids.length ? { 'last-event-id': ids[ids.length - 1] } : {}) },
        signal: AbortSignal.any([stop, AbortSignal.timeout(REQUEST_BOUND_MS)]),
      });
      if (res.status === 200 && res.body) {
        for await (const block of sseBlocks(res.body)) {
          const id = /^id: (.+)$/m.exec(block)?.[1];
          const type = /^event: (.+)$/m.exec(block)?.[1];
          if (id && type !== 'error') ids.push(id);
          if (type === 'training_ended' || type === 'training_failed') return ids;
        }
      } else {
        await res.body?.cancel();
      }
    } catch {
      // A broken connection: resume below, as a client would.
    }
    await sleep(1_000);
  }
  throw new Error(`the event stream of job ${jobId} never reached a final event; got ${ids.length} events`);
}

/**
 * The job ended exactly once, cleanly: `succeeded` with its checkpoint, or `failed` with an
 * error message; its events are each stored once, in order, with one terminal event and
 * every gradient step present; its checkpoint (if any) is the model's, once.
 */
export async function expectJobEndedOnce(stack: Stack, key: string, jobId: string): Promise<TrainingJobRecord> {
  const job = await waitForJobEnd(stack, key, jobId);
  expect(['succeeded', 'failed']).toContain(job.status);
  if (job.status === 'failed') {
    expect(typeof job.error_message).toBe('string');
    expect(job.error_message?.length).toBeGreaterThan(0);
    expect(job.checkpoint_step).toBeNull();
  } else {
    expect(job.error_message).toBeNull();
    expect(job.checkpoint_step).toEqual(expect.any(Number));
  }

  const events = await jobEvents(stack, key, jobId);
  // The same events, one per page: every `after` cursor leads to the next one, none skipped or repeated.
  const oneByOne = await jobEvents(stack, key, jobId, 1);
  expect(oneByOne.map((e) => e.id)).toEqual(events.map((e) => e.id));
  expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  const times = events.map((e) => Date.parse(e.created_at));
  expect(times).toEqual([...times].sort((a, b) => a - b));

  const types = events.map((e) => e.type);
  const terminal = types.filter((t) => t === 'training_ended' || t === 'training_failed');
  expect(terminal).toEqual([job.status === 'succeeded' ? 'training_ended' : 'training_failed']);
  expect(types.at(-1)).toBe(terminal[0]);
  if (job.status === 'failed') expect(events.at(-1)?.data['error_message']).toBe(job.error_message);

  const started = events.filter((e) => e.type === 'training_started');
  const steps = events.filter((e) => e.type === 'gradient_step');
  if (job.status === 'succeeded') {
    expect(started).toHaveLength(1);
    expect(types[0]).toBe('training_started');
    expect(steps).toHaveLength(started[0].data['num_sequences'] as number);
  } else {
    expect(started.length).toBeLessThanOrEqual(1);
    if (started.length === 1) expect(steps.length).toBeLessThanOrEqual(started[0].data['num_sequences'] as number);
  }
  return job;
}

/**
 * The model's checkpoints are steps 0..n, each once, one per succeeded job (with the job's
 * id); every adapter in the artifact store is whole (its manifest lists both files, each
 * verified, the weights' digest the recorded one); each one is served by chat.
 */
export async function expectCheckpointsIntact(stack: Stack, key: string, model: TrainableModel, jobs: TrainingJobRecord[]): Promise<void> {
  const checkpoints: CheckpointRecord[] = [];
  for (;;) {
    const after = checkpoints.at(-1)?.id;
    const page = await stack.json<Page<CheckpointRecord>>(
      'GET',
      `/v1/preview/models/${model.id}/checkpoints?order=asc&limit=2${after ? `&after=${after}` : ''}`,
      key,
    );
    checkpoints.push(...page.data);
    if (!page.has_more) break;
  }
  const succeeded = jobs.filter((j) => j.status === 'succeeded');
  expect(checkpoints.map((c) => c.step)).toEqual(Array.from({ length: succeeded.length + 1 }, (_, i) => i));
  for (const job of succeeded) {
    expect(checkpoints.filter((c) => c.id === job.id).map((c) => c.step)).toEqual([job.checkpoint_step]);
  }

  const store = stack.artifacts();
  const bundles = await stack.withDatabase(async (db) => {
    const { rows } = await db.query('SELECT id, adapter_path FROM checkpoints WHERE model_id = $1', [model.id]);
    return new Map(rows.map((r: { id: string; adapter_path: string }) => [r.id, r.adapter_path.replace(/^sha256:/, '')]));
  });
  for (const checkpoint of checkpoints) {
    const files = await readBundle(store, bundles.get(checkpoint.id) as string);
    expect([...files.keys()]).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(createHash('sha256').update(files.get('adapter_model.safetensors') as Buffer).digest('hex')).toBe(checkpoint.adapter_sha256);
    const served = await chatRequest(stack, key, { model: `${model.name}:step${checkpoint.step}`, maxTokens: 4 }).done;
    expect(served).toMatchObject({ status: 200, step: String(checkpoint.step) });
  }
}

// One fault, end to end

export interface FaultContext {
  stack: Stack;
  key: string;
  /** The uploaded SFT dataset every job trains on. */
  fileId: string;
}

/**
 * The stack of one fault spec: every app (on `database` when given, e.g. a private PostgreSQL
 * server; under the supervisor of `npm start` when `supervised`), the tiny model, a key and the
 * SFT data every job trains on.
 */
export async function startFaultStack<Nats extends NatsUnderTest = TestNatsServer>(
  database?: { url: string },
  supervised?: { env?: Record<string, string> },
  messaging?: { nats: () => Promise<Nats>; env: Record<string, string> },
): Promise<FaultContext & { stack: Stack<Nats> }> {
  const stack = await Stack.start<Nats>({ env: { MAX_COMPLETION_TOKENS: '2000', ...messaging?.env }, database, supervised, nats: messaging?.nats });
  stack.addTinyModel(BASE_MODEL);
  const { key } = await stack.createKey('acme');
  return { stack, key, fileId: await uploadSftData(stack, key, SFT_LINES) };
}

/** Writes what each fault did (describeFault) next to the stack's logs. */
export function writeFaultSummary(stack: Stack | undefined, summary: Record<string, string>): void {
  if (stack) writeFileSync(join(stack.logDir, 'faults-summary.json'), JSON.stringify(summary, null, 2));
}

export interface Fault {
  /** Names the model trained during this fault. */
  name: string;
  /** The apps that are the part (killed and started again): every other process must stay the same. */
  restarts: AppName[];
  kill(): Promise<void>;
  restart(): Promise<void>;
  /** What to wait for while the part is down (default: a few seconds). */
  whileDown?(jobId: string): Promise<void>;
}

export interface FaultReport {
  /** When the part was killed (epoch ms). */
  killedAt: number;
  /** Requests unanswered at the moment of the kill, as they ended (the long ones included). */
  inFlight: ChatOutcome[];
  /** Two long completions the inference worker was generating when the part was killed. */
  long: { stream: ChatOutcome; plain: ChatOutcome };
  /** Requests sent while the part was down (a probe sent after the kill included). */
  whileDown: ChatOutcome[];
  /** A request sent while the part was down for a name chat had never resolved (its cache cannot answer it). */
  unresolvedProbe: ChatOutcome;
  /** Requests sent once the part was back (after the first answer that followed its restart). */
  after: ChatOutcome[];
  /** From the part's restart (its process started, or ready under the supervisor) to the first request answered after it. */
  servedAgainMs: number;
  job: TrainingJobRecord;
}

/**
 * Kills a part while chat traffic flows and an SFT job trains, waits, starts it again, and
 * checks what must hold whatever the part: every request ended within the bound with an
 * answer or a clean 503/504, every request once the part is back is answered, the job ended
 * exactly once with its events and checkpoints intact, and no other process was restarted.
 */
export async function runFault({ stack, key, fileId }: FaultContext, fault: Fault): Promise<FaultReport> {
  const model = await createModel(stack, key, fault.name);
  const jobId = await startSftJob(stack, key, model, fileId);
  const stopFollowing = new AbortController();
  const streamed = followJobEvents(stack, key, jobId, stopFollowing.signal);
  streamed.catch(() => undefined);
  const traffic = new ChatTraffic(stack, key, { model: model.name, maxTokens: 16 });
  const long: ReturnType<typeof chatRequest>[] = [];
  const probes: ReturnType<typeof chatRequest>[] = [];
  try {
    await waitForSteps(stack, key, jobId, 2);
    await waitFor(() => traffic.outcomes.some(isSuccess), { what: 'chat traffic to flow', timeoutMs: 60_000 });
    // Two long completions known to be on the worker (it reports two active sequences with
    // the traffic paused), then the traffic again, so that short ones are in flight too.
    await traffic.pause();
    for (const stream of [true, false]) {
      long.push(chatRequest(stack, key, { model: model.name, maxTokens: LONG_TOKENS, stream, temperature: 0, prompt: 'go on' }));
    }
    await long[0].started;
    await waitFor(async () => (await inferenceWorkersActive(stack)) >= 2, { what: 'both long completions to run', timeoutMs: 30_000 });
    traffic.resume();
    await waitFor(() => traffic.inFlight().length > 0, { what: 'chat traffic in flight', timeoutMs: 10_000, intervalMs: 10 });
    const others = pidsExcept(stack, ALL_APPS, ...fault.restarts);
    const inFlight = [...traffic.inFlight(), ...long.map((l) => l.outcome)];
    // The fault must land during training, not after it.
    expect((await stack.json<TrainingJobRecord>('GET', `/v1/preview/training-jobs/${jobId}`, key)).status).toBe('running');

    const killedAt = Date.now();
    await fault.kill();
    // A request sent once the part is surely gone, whatever the traffic's clients are waiting for.
    await sleep(1_000);
    probes.push(chatRequest(stack, key, { model: model.name, maxTokens: 16 }));
    probes.push(chatRequest(stack, key, { model: `${model.name}:step0`, maxTokens: 16 }));
    await (fault.whileDown ? fault.whileDown(jobId) : sleep(2_000));
    const restartedAt = Date.now();
    await fault.restart();
    const startedAgainAt = Date.now();
    const back = await waitForChat(stack, key, model.name, `chat to answer again after the ${fault.name} fault`);
    const backAt = back.endedAt ?? Date.now();
    await waitFor(() => traffic.since(backAt).some(isSuccess), { what: 'the traffic to be answered again', timeoutMs: 60_000 });
    const outcomes = await traffic.stop();
    const [stream, plain] = await Promise.all(long.map((l) => l.done));
    const [probe, unresolvedProbe] = await Promise.all(probes.map((p) => p.done));
    expectSettled([...outcomes, stream, plain, probe, unresolvedProbe]);
    const after = outcomes.filter((o) => o.startedAt >= backAt);
    expect(after.filter((o) => !isSuccess(o))).toEqual([]);

    const job = await expectJobEndedOnce(stack, key, jobId);
    // Followed live across the fault, resuming after every break: each event once, in order.
    expect(await streamed).toEqual((await jobEvents(stack, key, jobId)).map((e) => e.id));
    await expectCheckpointsIntact(stack, key, model, [job]);
    expect(pidsExcept(stack, ALL_APPS, ...fault.restarts)).toEqual(others);
    // Every component reports ready again: no readiness probe is stuck on the outage.
    await waitFor(async () => (await stack.fetch('/v1/system-check')).status === 200, {
      what: 'system-check to report every component ready',
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    return {
      killedAt,
      inFlight,
      long: { stream, plain },
      whileDown: [probe, ...outcomes.filter((o) => o.startedAt >= killedAt && o.startedAt < restartedAt)],
      unresolvedProbe,
      after,
      servedAgainMs: backAt - startedAgainAt,
      job,
    };
  } finally {
    stopFollowing.abort();
    await traffic.stop();
    await Promise.all([...long, ...probes].map((l) => l.done));
  }
}

/** How a fault went, one line for docs/reliability.md. */
export function describeFault(report: FaultReport): string {
  const count = (list: ChatOutcome[], ok: (o: ChatOutcome) => boolean) => list.filter(ok).length;
  const failures = (list: ChatOutcome[]) =>
    [...new Set(list.filter((o) => !isSuccess(o)).map((o) => `${o.status}${o.error?.code ? ` ${o.error.code}` : ''}`))].join(', ') || 'none';
  const ms = (list: ChatOutcome[]) => Math.max(0, ...list.map((o) => (o.endedAt ?? 0) - o.startedAt));
  return [
    `in flight: ${count(report.inFlight, isSuccess)}/${report.inFlight.length} answered, failures ${failures(report.inFlight)}, slowest ${ms(report.inFlight)} ms`,
    ...Object.entries(report.long).map(
      ([kind, o]) => `long ${kind}: ${isSuccess(o) ? 'answered' : `${o.status} ${o.error?.code ?? ''}`} after ${ms([o])} ms`,
    ),
    `while down: ${count(report.whileDown, isSuccess)}/${report.whileDown.length} answered, failures ${failures(report.whileDown)}, slowest ${ms(report.whileDown)} ms`,
    `answered again ${report.servedAgainMs} ms after the restart`,
    `after: ${count(report.after, isSuccess)}/${report.after.length} answered`,
    `job: ${report.job.status}${report.job.error_message ? ` (${report.job.error_message})` : ''}, step ${report.job.checkpoint_step}`,
  ].join('; ');
}
