import { resolveWorkQueue, WorkQueues } from '@trainyard/contracts';
import { waitFor } from '@trainyard/testing';
import { connect } from 'nats';
import OpenAI from 'openai';
import { Stack } from './support/stack';

// Admission control: one worker with room for one sequence and no queue beyond it.

describe('chat completions under load', () => {
  let stack: Stack;
  let client: OpenAI;
  let model: string;

  beforeAll(async () => {
    stack = await Stack.start({
      env: { MAX_BATCH_SEQUENCES: '1', MAX_QUEUED_COMPLETIONS: '0', WORKER_POLL_MS: '200', MAX_COMPLETION_TOKENS: '1000000' },
    });
    // A context window so long that the long request below would run for minutes if
    // cancellation did not stop it: the slot coming free proves the cancel worked.
    model = stack.addTinyModel('trainyard/tiny-long', 1, { maxPositionEmbeddings: 16_384 });
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: (await stack.createKey('acme')).key, maxRetries: 0 });
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  // Gives up quickly: a request that was admitted by mistake would wait for the only slot.
  const short = () =>
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }, { timeout: 1_500 });

  it('answers 429 with Retry-After when every worker is full, and frees the slot when the client goes away', async () => {
    const abort = new AbortController();
    const long = await client.chat.completions.create(
      { model, messages: [{ role: 'user', content: 'go on' }], max_tokens: 16_000, temperature: 0, stream: true },
      { signal: abort.signal },
    );
    const iterator = long[Symbol.asyncIterator]();
    await iterator.next(); // admitted: the worker is streaming it

    // Admission is counted as it is granted: the very next request is refused, not queued.
    const refused = await short().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    if (!(refused instanceof OpenAI.RateLimitError)) return;
    expect(refused.headers?.get('retry-after')).toBe('1');
    expect(refused.message).toMatch(/busy/);

    abort.abort();
    const answered = await waitFor(() => short().catch(() => undefined), {
      what: 'the slot to be freed after the client went away',
      timeoutMs: 10_000,
      intervalMs: 200,
    });
    expect(answered.choices).toHaveLength(1);
  });

  it('answers 503 when no inference worker is running', async () => {
    await stack.stopApp('inference-worker');
    const error = await waitFor(
      async () => {
        const e = await short().then(
          () => undefined,
          (err: unknown) => err,
        );
        return e instanceof OpenAI.InternalServerError && e;
      },
      { what: 'a 503 without workers', timeoutMs: 10_000, intervalMs: 200 },
    );
    expect(error.status).toBe(503);
    expect(error.message).toMatch(/No inference worker/);
    await stack.startApp('inference-worker');
    await waitFor(() => short().catch(() => undefined), { what: 'service again', timeoutMs: 15_000, intervalMs: 300 });
  });

  it('answers 503 at once when the inference queue refuses the work item', async () => {
    const nc = await connect({ servers: stack.nats.url });
    const jsm = await nc.jetstreamManager();
    const stream = resolveWorkQueue(WorkQueues.inference, stack.jetstreamPrefix).stream;
    const { config } = await jsm.streams.info(stream);
    try {
      // Work items larger than the stream takes: refused, while the stream and the worker stay
      // healthy (deleting the stream made the worker unready too, a 503 of another kind).
      await jsm.streams.update(stream, { ...config, max_msg_size: 16 });
      // Within the client's 1.5 s: a clear 503, not a wait for a worker that never gets it.
      // (A 429 first, while the end of the previous test's last completion reaches chat, is retried.)
      const error = await waitFor(
        async () => {
          const e = await short().then(
            () => undefined,
            (err: unknown) => err,
          );
          return !(e instanceof OpenAI.RateLimitError) && e;
        },
        { what: 'an answer other than 429', timeoutMs: 10_000, intervalMs: 200 },
      );
      expect(error).toBeInstanceOf(OpenAI.InternalServerError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
      expect((error as Error).message).toMatch(/inference queue is unavailable/);
    } finally {
      await jsm.streams.update(stream, config);
      await nc.close();
    }
    await waitFor(() => short().catch(() => undefined), { what: 'service again', timeoutMs: 15_000, intervalMs: 300 });
  });
});
