import { resolveWorkQueue, WorkQueues } from '@trainyard/contracts';
import { connect, NatsConnection } from 'nats';
import OpenAI from 'openai';
import { startSftJob, uploadSftData, waitForJobEnd } from './support/faults';
import { Stack } from './support/stack';

// Chat completions through the whole stack (gateway, chat, registry, inference worker on
// wasm) with the official OpenAI client, on the engine's tiny model.

describe('chat completions with the official openai client', () => {
  let stack: Stack;
  let client: OpenAI;
  let model: string;
  let key: string;
  let nc: NatsConnection;

  beforeAll(async () => {
    // Chat caches model resolutions; a TTL longer than the file runs means only the registry's
    // change announcements can make it serve a new checkpoint (the tests of that can fail).
    stack = await Stack.start({ env: { MAX_CHOICES: '4', MAX_COMPLETION_TOKENS: '256', MODEL_RESOLUTION_CACHE_TTL_MS: '3600000' } });
    model = stack.addTinyModel();
    key = (await stack.createKey('acme')).key;
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
    nc = await connect({ servers: stack.nats.url });
  }, 120_000);

  afterAll(async () => {
    await nc?.close();
    await stack?.stop();
  }, 60_000);

  /** Completions chat has queued so far: every one is a message more in the inference stream, taken or not. */
  const queued = async () => {
    const jsm = await nc.jetstreamManager();
    return (await jsm.streams.info(resolveWorkQueue(WorkQueues.inference, stack.jetstreamPrefix).stream)).state.last_seq;
  };

  const ask = (extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}) =>
    client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Say something.' }],
      max_tokens: 16,
      seed: 7,
      ...extra,
    });

  it('answers a plain request in the OpenAI shape, saying which weights served it', async () => {
    const { data, response } = await ask().withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.id).toMatch(/^chatcmpl-/);
    expect(data.model).toBe(model);
    expect(data.choices).toHaveLength(1);
    const [choice] = data.choices;
    expect(choice.message.role).toBe('assistant');
    expect(typeof choice.message.content).toBe('string');
    expect(['stop', 'length']).toContain(choice.finish_reason);
    expect(data.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(data.usage?.completion_tokens).toBeGreaterThan(0);
    expect(data.usage?.completion_tokens).toBeLessThanOrEqual(16);
    expect(data.usage?.total_tokens).toBe((data.usage?.prompt_tokens ?? 0) + (data.usage?.completion_tokens ?? 0));
    expect(response.headers.get('x-trainyard-checkpoint-step')).toBe('base');
    expect((data as unknown as { checkpoint_step: number | null }).checkpoint_step).toBeNull();
    expect(choice.logprobs).toBeNull();
  });

  it('gives the same tokens for the same seed, and other tokens for another seed', async () => {
    const a = await ask({ max_tokens: 24 });
    const b = await ask({ max_tokens: 24 });
    const c = await ask({ max_tokens: 24, seed: 8 });
    expect(b.choices[0].message.content).toBe(a.choices[0].message.content);
    expect(c.choices[0].message.content).not.toBe(a.choices[0].message.content);
  });

  it('streams chunks that add up to the same answer, then a usage chunk and [DONE]', async () => {
    const whole = await ask({ max_tokens: 24 });
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Say something.' }],
      max_tokens: 24,
      seed: 7,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe('chat.completion.chunk');
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? '';
        finish = choice.finish_reason ?? finish;
      }
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text).toBe(whole.choices[0].message.content);
    expect(finish).toBe(whole.choices[0].finish_reason);
    expect(usage).toEqual(whole.usage);
  });

  it('returns n choices from one prompt', async () => {
    const data = await ask({ n: 3, max_tokens: 12 });
    expect(data.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(new Set(data.choices.map((c) => c.message.content)).size).toBeGreaterThan(1);
  });

  it('reuses the prompts it has prefilled, and says how many tokens it reused', async () => {
    const cached = (data: OpenAI.Chat.ChatCompletion) => data.usage?.prompt_tokens_details?.cached_tokens;
    const content = `Prompt reuse, run ${Date.now()}: tell me about trains.`;
    const first = await ask({ messages: [{ role: 'user', content }] });
    const prompt = first.usage?.prompt_tokens ?? 0;
    // Other prompts share the chat template's beginning at most.
    expect(cached(first)).toBeLessThan(prompt);
    const again = await ask({ messages: [{ role: 'user', content }] });
    expect(again.usage?.prompt_tokens).toBe(prompt);
    expect(cached(again)).toBe(prompt);
    expect(again.choices[0].message.content).toBe(first.choices[0].message.content);
    // The conversation's next turn begins with the whole first prompt.
    const next = await ask({
      messages: [
        { role: 'user', content },
        { role: 'assistant', content: first.choices[0].message.content ?? '' },
        { role: 'user', content: 'And then?' },
      ],
    });
    expect(cached(next)).toBeGreaterThanOrEqual(prompt - 1);
    expect(cached(next)).toBeLessThan(next.usage?.prompt_tokens ?? 0);
  });

  it('stops before a stop sequence and says so', async () => {
    const free = (await ask({ max_tokens: 32 })).choices[0].message.content ?? '';
    expect(free.length).toBeGreaterThan(4);
    const stop = free.slice(2, 4);
    const stopped = await ask({ max_tokens: 32, stop: [stop] });
    expect(stopped.choices[0].message.content).toBe(free.slice(0, free.indexOf(stop)));
    expect(stopped.choices[0].finish_reason).toBe('stop');
  });

  it('ends at max_tokens with finish_reason "length"', async () => {
    const data = await ask({ max_tokens: 3, temperature: 0 });
    if (data.choices[0].finish_reason === 'length') expect(data.usage?.completion_tokens).toBe(3);
    else expect(data.usage?.completion_tokens).toBeLessThan(3);
  });

  it('reports logprobs and top_logprobs consistent with the returned tokens', async () => {
    const data = await ask({ logprobs: true, top_logprobs: 3, max_tokens: 10 });
    const entries = data.choices[0].logprobs?.content ?? [];
    expect(entries).toHaveLength(data.usage?.completion_tokens ?? -1);
    for (const entry of entries) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.top_logprobs).toHaveLength(3);
      const alternatives = entry.top_logprobs.map((t) => t.logprob);
      expect([...alternatives].sort((x, y) => y - x)).toEqual(alternatives);
      // The sampled token is at most as likely as the best alternative.
      expect(entry.logprob).toBeLessThanOrEqual(alternatives[0] + 1e-6);
      expect(entry.bytes).toEqual([...Buffer.from(entry.token, 'utf8')]);
    }
  });

  it('accepts the trailing-slash alias of the route', async () => {
    const res = await stack.fetch('/v1/chat/completions/', {
      method: 'POST',
      key,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, extra_body_field: 1 }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
  });

  describe('JSON mode', () => {
    const prompts = ['Describe a cat.', 'List three numbers.'];

    it('always answers with text that parses as JSON, over many prompts and seeds', async () => {
      for (const content of prompts) {
        for (let seed = 0; seed < 6; seed++) {
          const data = await ask({ messages: [{ role: 'user', content }], seed, max_tokens: 40, response_format: { type: 'json_object' } });
          const text = data.choices[0].message.content ?? '';
          expect(() => JSON.parse(text)).not.toThrow();
          expect(typeof JSON.parse(text)).toBe('object');
        }
      }
    });

    it('matches a json_schema', async () => {
      const schema = {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
        required: ['name', 'age'],
        additionalProperties: false,
      };
      for (let seed = 0; seed < 4; seed++) {
        const data = await ask({
          seed,
          max_tokens: 60,
          response_format: { type: 'json_schema', json_schema: { name: 'person', schema, strict: true } },
        });
        const value = JSON.parse(data.choices[0].message.content ?? '');
        expect(typeof value.name).toBe('string');
        expect(Number.isInteger(value.age)).toBe(true);
        expect(Object.keys(value).every((k) => ['name', 'age', 'tags'].includes(k))).toBe(true);
      }
    });

    it('closes the document within a small max_tokens, and reports "stop" for the complete document', async () => {
      for (let seed = 0; seed < 6; seed++) {
        const data = await ask({ seed, max_tokens: 6, temperature: 1, response_format: { type: 'json_object' } });
        expect(() => JSON.parse(data.choices[0].message.content ?? '')).not.toThrow();
        expect(data.choices[0].finish_reason).toBe('stop');
        expect(data.usage?.completion_tokens).toBeLessThanOrEqual(6);
      }
    });

    it('refuses a schema that cannot be compiled with 400 naming response_format, before queueing any work', async () => {
      await ask(); // the stream exists
      const before = await queued();
      const error = await ask({
        response_format: { type: 'json_schema', json_schema: { name: 'bad', schema: { type: 'integr' } } },
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe('response_format');
      expect(await queued()).toBe(before);
    });

    it('refuses with 400 naming max_tokens a schema whose smallest document does not fit, and fills one that just fits', async () => {
      const schema = { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' }, minItems: 8 } }, required: ['items'] };
      const response_format = { type: 'json_schema', json_schema: { name: 'numbers', schema, strict: true } } as const;
      const error = await ask({ max_tokens: 16, response_format }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      const { param, type, message } = error as InstanceType<typeof OpenAI.APIError>;
      expect({ param, type }).toEqual({ param: 'max_tokens', type: 'invalid_request_error' });
      const needed = Number(/response_format needs at least (\d+) tokens for its smallest document, but max_tokens is 16$/.exec(message)?.[1]);
      expect(needed).toBeGreaterThan(16);

      const data = await ask({ max_tokens: needed, response_format });
      expect(data.usage?.completion_tokens).toBeLessThanOrEqual(needed);
      expect(JSON.parse(data.choices[0].message.content ?? '').items.length).toBeGreaterThanOrEqual(8);
    });

    it('gives a streamed request refused by the worker its own status too, not an error inside a 200 stream', async () => {
      const schema = { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' }, minItems: 8 } }, required: ['items'] };
      const error = await client.chat.completions
        .create({
          model,
          messages: [{ role: 'user', content: 'Numbers.' }],
          max_tokens: 16,
          stream: true,
          response_format: { type: 'json_schema', json_schema: { name: 'numbers', schema } },
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe('max_tokens');
    });
  });

  it('accepts a conversation with tools, tool calls and tool results', async () => {
    const data = await ask({
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 3}' },
      ],
    });
    expect(['stop', 'length', 'tool_calls']).toContain(data.choices[0].finish_reason);
    if (data.choices[0].finish_reason === 'tool_calls') expect(data.choices[0].message.tool_calls?.length).toBeGreaterThan(0);
    else expect(typeof data.choices[0].message.content).toBe('string');
  });

  it('serves a trainable model by name at its step 0, with logprobs and token ids by default', async () => {
    const created = await stack.fetch('/v1/preview/models', {
      method: 'POST',
      key,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ entity: null, project: 'chat-e2e', name: 'agent', base_model: model, return_existing: true }),
    });
    expect(created.status).toBe(200);
    for (const name of ['wandb-artifact:///acme/chat-e2e/agent', 'acme/chat-e2e/agent:step0']) {
      const { data, response } = await ask({ model: name, max_tokens: 8 }).withResponse();
      expect(response.headers.get('x-trainyard-checkpoint-step')).toBe('0');
      const raw = data as unknown as { checkpoint_step: number; prompt_token_ids: number[]; choices: { token_ids: number[] }[] };
      expect(raw.checkpoint_step).toBe(0);
      const entries = data.choices[0].logprobs?.content ?? [];
      expect(entries.length).toBe(data.usage?.completion_tokens);
      expect(raw.choices[0].token_ids).toEqual(entries.map((e) => (e as unknown as { token_id: number }).token_id));
      expect(raw.prompt_token_ids.length).toBe(data.usage?.prompt_tokens);
    }
  });

  it('follows a new checkpoint from the very next request after it is recorded, for a name without a step', async () => {
    const created = await stack.json<{ id: string; entity: string; project: string; name: string }>('POST', '/v1/preview/models', key, {
      entity: null,
      project: 'chat-e2e',
      name: 'follows',
      base_model: model,
      return_existing: true,
    });
    const name = `wandb-artifact:///${created.entity}/${created.project}/${created.name}`;
    const served = async (as: string) => {
      const { data, response } = await ask({ model: as, max_tokens: 2 }).withResponse();
      return { header: response.headers.get('x-trainyard-checkpoint-step'), field: (data as unknown as { checkpoint_step: number | null }).checkpoint_step };
    };
    // Served twice: the second time from chat's cache.
    expect(await served(name)).toEqual({ header: '0', field: 0 });
    expect(await served(name)).toEqual({ header: '0', field: 0 });
    expect(await served(`${name}:latest`)).toEqual({ header: '0', field: 0 });

    // A one-step SFT job: the training worker records step 1 through the registry.
    const job = await startSftJob(stack, key, { id: created.id, name }, await uploadSftData(stack, key, 1));
    expect(await waitForJobEnd(stack, key, job)).toMatchObject({ status: 'succeeded', checkpoint_step: 1 });

    expect(await served(name)).toEqual({ header: '1', field: 1 });
    expect(await served(`${name}:latest`)).toEqual({ header: '1', field: 1 });
    expect(await served(`${name}:step0`)).toEqual({ header: '0', field: 0 });
  }, 180_000);

  describe('bad requests, in the OpenAI error envelope', () => {
    it('answers an unknown model with 404 model_not_found', async () => {
      const error = await ask({ model: 'no/such-model' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    });

    it('names a field that fails validation', async () => {
      const error = await ask({ temperature: 5 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe('temperature');
    });

    it.each([
      [{ n: 5 }, 'n'],
      [{ max_tokens: 1000 }, 'max_tokens'],
      [{ top_logprobs: 2 }, 'top_logprobs'],
    ])('refuses %p over the configured limits with 400 naming %s', async (extra, param) => {
      const error = await ask(extra).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe(param);
    });

    it('refuses a prompt longer than the context window with 400 context_length_exceeded, before queueing any work', async () => {
      await ask(); // the stream exists
      const before = await queued();
      const long = 'word '.repeat(3000);
      for (const stream of [false, true]) {
        const error = await client.chat.completions
          .create({ model, messages: [{ role: 'user', content: long }], max_tokens: 16, stream })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(OpenAI.BadRequestError);
        const apiError = error as InstanceType<typeof OpenAI.APIError>;
        expect(apiError.status).toBe(400);
        expect(apiError.code).toBe('context_length_exceeded');
        expect(apiError.param).toBe('messages');
        expect(apiError.message).toMatch(/This model's maximum context length is 2048 tokens, but the messages resulted in \d+ tokens/);
      }
      expect(await queued()).toBe(before);
      // A max_tokens past what the window has left is not refused: the reply stops at the window.
      const fits = await ask({ messages: [{ role: 'user', content: 'word '.repeat(1000) }], max_tokens: 256 });
      const usage = fits.usage as OpenAI.CompletionUsage;
      expect(usage.prompt_tokens + 256).toBeGreaterThan(2048);
      expect(usage.total_tokens).toBeLessThanOrEqual(2048);
      expect(await queued()).toBe(before + 1);
    }, 60_000);
  });
});
