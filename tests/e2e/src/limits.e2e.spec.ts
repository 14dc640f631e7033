import { waitFor } from '@trainyard/testing';
import OpenAI from 'openai';
import { Stack } from './support/stack';

// The gateway's own load shedding, with limits low enough to reach: per API key a rate
// (10 requests a minute, as a token bucket: one more every 6 s) and one request in progress
// at once; for the whole gateway, two requests in progress.

const RATE = 10;
const WINDOW_MS = 60_000;

interface OpenAiError {
  error: { code: string; type: string; message: string };
}

describe('per-key and gateway-wide limits', () => {
  let stack: Stack;
  let model: string;

  beforeAll(async () => {
    stack = await Stack.start({
      env: {
        KEY_RATE_LIMIT_REQUESTS: String(RATE),
        KEY_RATE_LIMIT_WINDOW_MS: String(WINDOW_MS),
        KEY_CONCURRENCY_LIMIT: '1',
        MAX_IN_FLIGHT_REQUESTS: '2',
        MAX_COMPLETION_TOKENS: '100000',
        WORKER_POLL_MS: '200',
      },
    });
    // A long context, so that a stream runs until the test lets it go.
    model = stack.addTinyModel('trainyard/tiny-long', 1, { maxPositionEmbeddings: 16_384 });
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const newKey = async (entity: string) => (await stack.createKey(entity)).key;
  const models = (key: string) => stack.call<OpenAiError>('GET', '/v1/models', { key });

  /** A streamed completion that holds its request open until aborted; resolves once it is streaming. */
  async function holdStream(key: string): Promise<AbortController> {
    const client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
    const abort = new AbortController();
    const stream = await client.chat.completions.create(
      { model, messages: [{ role: 'user', content: 'go on' }], max_tokens: 16_000, temperature: 0, stream: true },
      { signal: abort.signal },
    );
    await stream[Symbol.asyncIterator]().next();
    return abort;
  }

  it('refuses a key past its rate with 429, Retry-After and the OpenAI envelope; other keys go on; the key recovers after the wait', async () => {
    const [key, other] = [await newKey('rate-a'), await newKey('rate-b')];
    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof models>> | undefined;
    // One more request is allowed every 6 s, so a refusal comes within a few more.
    for (let i = 0; i < RATE + 20 && !refused; i++) {
      const reply = await models(key);
      statuses.push(reply.status);
      if (reply.status === 429) refused = reply;
    }
    expect(statuses.slice(0, RATE)).toEqual(Array(RATE).fill(200));
    expect(refused).toBeDefined();
    const retryAfter = Number(refused?.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(WINDOW_MS / RATE / 1000);
    expect(refused?.headers.get('x-should-retry')).toBe('true');
    expect(refused?.body.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(refused?.body.error.message).toMatch(/Rate limit reached for this API key/);

    // Preview routes answer the same refusal in their own envelope.
    const preview = await stack.call<{ detail: string }>('GET', '/v1/preview/base-models', { key });
    expect(preview.status).toBe(429);
    expect(preview.body.detail).toMatch(/Rate limit/);
    expect(preview.headers.get('retry-after')).not.toBeNull();

    expect((await models(other)).status).toBe(200);

    // Waiting as long as Retry-After says is enough.
    const wait = Number(preview.headers.get('retry-after'));
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    expect((await models(key)).status).toBe(200);
  }, 60_000);

  it("refuses a key's request past its concurrency limit while other keys are served, and frees the slot when the stream ends", async () => {
    const [key, other] = [await newKey('busy-a'), await newKey('busy-b')];
    const stream = await holdStream(key);

    const refused = await models(key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body.error).toMatchObject({ code: 'rate_limit_exceeded' });
    expect(refused.body.error.message).toMatch(/concurrent requests for this API key/);

    expect((await models(other)).status).toBe(200);

    stream.abort();
    await waitFor(async () => (await models(key)).status === 200, { what: 'the key to be served again', timeoutMs: 10_000, intervalMs: 200 });
  }, 60_000);

  it('sheds load past the gateway-wide bound with 429 before any work, never the health probes or the system check', async () => {
    const streams = [await holdStream(await newKey('cap-a')), await holdStream(await newKey('cap-b'))];
    const key = await newKey('cap-c');
    try {
      const refused = await models(key);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.body.error.message).toMatch(/at capacity/);
      // Refused before authentication: even a bad key gets the 429, not a 401.
      expect((await models('not-a-key')).status).toBe(429);
      expect((await stack.fetch('/v1/health')).status).toBe(200);
      const check = await stack.fetch('/v1/system-check');
      expect(check.status).toBe(200);
      expect(((await check.json()) as { status: string }).status).toBe('ok');
    } finally {
      streams[0].abort();
    }
    await waitFor(async () => (await models(key)).status === 200, { what: 'room again at the gateway', timeoutMs: 10_000, intervalMs: 200 });
    streams[1].abort();
  }, 60_000);
});
