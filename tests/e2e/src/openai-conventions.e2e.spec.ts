import OpenAI from 'openai';
import { Stack } from './support/stack';

// What the OpenAI clients assume of any OpenAI-compatible server, checked with the official
// SDK where it is the one that notices: error classes, error envelopes, retries, model ids,
// CORS for browser clients.

const ALLOWED_ORIGIN = 'https://app.example.com';

describe('OpenAI conventions', () => {
  let stack: Stack;
  let client: OpenAI;
  let model: string;
  let key: string;

  beforeAll(async () => {
    stack = await Stack.start({ env: { CORS_ORIGINS: `${ALLOWED_ORIGIN},http://localhost:5173` } });
    model = stack.addTinyModel();
    key = (await stack.createKey('acme')).key;
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const ask = (extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}) =>
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say something.' }], max_tokens: 12, seed: 3, ...extra });

  const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);

  describe('an invalid body', () => {
    it('is a 400 BadRequestError naming the field, with one message for one problem', async () => {
      const error = await failure(ask({ temperature: 'hot' as unknown as number }));
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error?.status).toBe(400);
      expect(error?.type).toBe('invalid_request_error');
      expect(error?.param).toBe('temperature');
      expect((error?.error as { message: string }).message).toBe('temperature: temperature must be a number conforming to the specified constraints');
    });

    it('names a nested field, and each field that is wrong once', async () => {
      const error = await failure(
        ask({ messages: [{ role: 'wizard', content: 'hi' }] as unknown as OpenAI.Chat.ChatCompletionMessageParam[], top_p: 3 }),
      );
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error?.param).toBe('messages[0].role');
      const message = (error?.error as { message: string }).message;
      expect(message.split('; ')).toHaveLength(2);
      expect(message).toMatch(/^messages\[0\]\.role: .*; top_p: top_p must not be greater than 1$/);
    });

    it('is a 400 saying so when it is not JSON, or not sent as JSON', async () => {
      const json = JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] });
      // fetch labels a string body text/plain when no type is given, and bytes not at all.
      for (const [type, body] of [['application/x-www-form-urlencoded', json], ['text/plain', json], [undefined, Buffer.from(json)]] as const) {
        const res = await stack.fetch('/v1/chat/completions', { method: 'POST', key, body, headers: type ? { 'content-type': type } : {} });
        const reply = (await res.json()) as { error: { message: string; type: string } };
        expect({ status: res.status, type: reply.error.type }).toEqual({ status: 400, type: 'invalid_request_error' });
        expect(reply.error.message).toMatch(/must be JSON sent with Content-Type: application\/json/);
      }
      const malformed = await stack.fetch('/v1/chat/completions', { method: 'POST', key, body: '{"model": ', headers: { 'content-type': 'application/json' } });
      expect(malformed.status).toBe(400);
      expect(((await malformed.json()) as { error: { message: string } }).error.message).toMatch(/^Malformed JSON/);
    });

    it('keeps FastAPI-style 422 {detail} on the preview (training) routes, which ART reads', async () => {
      const reply = await stack.call<{ detail: { loc: unknown[] }[] }>('POST', '/v1/preview/models', { key, body: { project: 5 } });
      expect(reply.status).toBe(422);
      expect(reply.body.detail.map((d) => d.loc)).toContainEqual(['body', 'project']);
    });

    it('refuses a tool result that answers no earlier tool call with 400 naming it', async () => {
      const error = await failure(
        ask({
          messages: [
            { role: 'user', content: 'Weather?' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }] },
            { role: 'tool', tool_call_id: 'call_2', content: 'sunny' },
          ],
        }),
      );
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error?.param).toBe('messages[2].tool_call_id');
    });
  });

  describe('unknown routes under /v1', () => {
    it.each([
      ['POST', '/v1/completions'],
      ['POST', '/v1/embeddings'],
      ['GET', '/v1/nope'],
    ])('%s %s is a 404 in the OpenAI envelope, which the SDK reads', async (method, path) => {
      const error = await failure(method === 'GET' ? client.get(path.replace('/v1', '')) : client.post(path.replace('/v1', ''), { body: { model } }));
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(error?.error).toEqual({ message: `No route for ${method} ${path}`, type: 'not_found_error', param: null, code: 'not_found' });
      expect(error?.message).toBe(`404 No route for ${method} ${path}`);
    });
  });

  describe('top_p 0', () => {
    it('is greedy decoding: the same answer as temperature 0, whatever the seed', async () => {
      const greedy = await ask({ temperature: 0, max_tokens: 16 });
      for (const seed of [1, 2]) {
        const nucleus = await ask({ top_p: 0, temperature: 1, seed, max_tokens: 16 });
        expect(nucleus.choices[0].message.content).toBe(greedy.choices[0].message.content);
      }
    });

    it('streams to the end, with [DONE]', async () => {
      const greedy = await ask({ temperature: 0, max_tokens: 16 });
      const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say something.' }], max_tokens: 16, top_p: 0, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe(greedy.choices[0].message.content);
    });
  });

  describe('x-should-retry', () => {
    it('is false on a client error and a conflict that stays, so that the SDK does not retry them', async () => {
      const bad = await stack.fetch('/v1/chat/completions', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [] }) });
      expect(bad.status).toBe(400);
      expect(bad.headers.get('x-should-retry')).toBe('false');
      const body = { entity: null, project: 'p', name: 'taken', base_model: model, return_existing: false };
      expect((await stack.call('POST', '/v1/preview/models', { key, body })).status).toBe(200);
      const clash = await stack.call('POST', '/v1/preview/models', { key, body });
      expect(clash.status).toBe(409);
      expect(clash.headers.get('x-should-retry')).toBe('false');
    });
  });

  describe('models.retrieve', () => {
    it('finds a base model whose id has a slash, raw and percent-encoded', async () => {
      const retrieved = await client.models.retrieve(model);
      expect(retrieved).toMatchObject({ id: model, object: 'model', owned_by: 'trainyard' });
      expect(typeof retrieved.created).toBe('number');
      const raw = await stack.call<OpenAI.Models.Model>('GET', `/v1/models/${model}`, { key });
      expect(raw.status).toBe(200);
      expect(raw.body).toEqual(retrieved);
    });

    it('finds a trainable model by the names chat accepts, raw and encoded, and 404s a step it does not have', async () => {
      await stack.json('POST', '/v1/preview/models', key, { entity: null, project: 'conv', name: 'agent', base_model: model, return_existing: true });
      for (const id of ['wandb-artifact:///acme/conv/agent', 'wandb-artifact:///acme/conv/agent:step0', 'acme/conv/agent:step0']) {
        expect(await client.models.retrieve(id)).toMatchObject({ id, object: 'model', owned_by: 'acme' });
        const raw = await stack.call<{ id: string }>('GET', `/v1/models/${id}`, { key });
        expect({ status: raw.status, id: raw.body.id }).toEqual({ status: 200, id });
      }
      const missing = await failure(client.models.retrieve('wandb-artifact:///acme/conv/agent:step3'));
      expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
      expect(missing?.code).toBe('model_not_found');
      const unknown = await failure(client.models.retrieve('no/such-model'));
      expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    });

    it("does not show another entity's model", async () => {
      const other = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: (await stack.createKey('globex')).key, maxRetries: 0 });
      const error = await failure(other.models.retrieve('wandb-artifact:///acme/conv/agent'));
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    });
  });

  describe('CORS', () => {
    const preflight = (origin: string) =>
      stack.fetch('/v1/chat/completions', {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-stainless-os' },
      });

    it('answers a preflight from an allowed origin with what it asked for', async () => {
      const res = await preflight(ALLOWED_ORIGIN);
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
      expect(res.headers.get('access-control-allow-methods')).toContain('POST');
      expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type, x-stainless-os');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    });

    it('lets a script from an allowed origin read the answer and its headers', async () => {
      const res = await stack.fetch('/v1/models', { key, headers: { origin: ALLOWED_ORIGIN } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
      expect(res.headers.get('access-control-expose-headers')).toContain('x-trainyard-checkpoint-step');
    });

    it('refuses a preflight from any other origin, and gives its requests no CORS headers', async () => {
      const res = await preflight('https://evil.example.com');
      expect(res.status).toBe(403);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/not allowed \(CORS_ORIGINS\)/);
      const plain = await stack.fetch('/v1/models', { key, headers: { origin: 'https://evil.example.com' } });
      expect(plain.headers.get('access-control-allow-origin')).toBeNull();
    });
  });
});
