import OpenAI from 'openai';
import { Stack } from './support/stack';

// Chat completions through the whole stack (gateway, chat, registry, inference worker on
// wasm) with the official OpenAI client, on the engine's tiny model.

describe('chat completions with the official openai client', () => {
  let stack: Stack;
  let client: OpenAI;
  let model: string;
  let key: string;

  beforeAll(async () => {
    stack = await Stack.start({ env: { MAX_CHOICES: '4', MAX_COMPLETION_TOKENS: '256' } });
    model = stack.addTinyModel();
    key = (await stack.createKey('acme')).key;
    client = new OpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

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

  describe('bad requests, in the OpenAI error envelope', () => {
    it('answers an unknown model with 404 model_not_found', async () => {
      const error = await ask({ model: 'no/such-model' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    });

    it('names a field that fails validation', async () => {
      const error = await ask({ temperature: 5 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
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

    it('refuses a prompt longer than the context window with 400', async () => {
      const long = 'word '.repeat(3000);
      const error = await ask({ messages: [{ role: 'user', content: long }] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as Error).message).toMatch(/context window/);
    });
  });
});
