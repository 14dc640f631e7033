import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { failure, startOpenAIStack } from './support/openai-stack';
import type { Stack } from './support/stack';

// The Responses API (POST /v1/responses) through the whole stack, with the clients that call it
// by default: the official openai SDK (create, stream, parse) and the AI SDK's OpenAI provider.

describe('the Responses API with the official openai client and the AI SDK', () => {
  let stack: Stack;
  let client: OpenAI;
  let model: string;
  let key: string;

  beforeAll(async () => {
    ({ stack, client, model, key } = await startOpenAIStack());
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const PROMPT = 'Say something.';
  /** The same request as a chat completion, greedy: the Responses API runs on the same machinery. */
  const chatText = async (max_tokens: number, instructions?: string) =>
    (
      await client.chat.completions.create({
        model,
        messages: [...(instructions ? [{ role: 'system' as const, content: instructions }] : []), { role: 'user', content: PROMPT }],
        max_tokens,
        temperature: 0,
      })
    ).choices[0].message.content;


  describe('responses.create', () => {
    it('answers in the Responses shape, with usage and the checkpoint that served it', async () => {
      const { data, response } = await client.responses.create({ model, input: PROMPT, max_output_tokens: 16, temperature: 0 }).withResponse();
      expect(data.object).toBe('response');
      expect(data.id).toMatch(/^resp_/);
      expect(data.model).toBe(model);
      expect(['completed', 'incomplete']).toContain(data.status);
      expect(data.output).toHaveLength(1);
      const [message] = data.output;
      expect(message).toMatchObject({ type: 'message', role: 'assistant', id: expect.stringMatching(/^msg_/) });
      expect(data.output_text).toBe(await chatText(16));
      expect(data.usage?.input_tokens).toBeGreaterThan(0);
      expect(data.usage?.output_tokens).toBeGreaterThan(0);
      expect(data.usage?.output_tokens).toBeLessThanOrEqual(16);
      expect(data.usage?.total_tokens).toBe((data.usage?.input_tokens ?? 0) + (data.usage?.output_tokens ?? 0));
      expect(response.headers.get('x-trainyard-checkpoint-step')).toBe('base');
      expect((data as unknown as { checkpoint_step: number | null }).checkpoint_step).toBeNull();
      expect((data as unknown as { store: boolean }).store).toBe(true);
    });

    it('puts instructions before the input, as a system message would be', async () => {
      const data = await client.responses.create({ model, instructions: 'Be brief.', input: PROMPT, max_output_tokens: 12, temperature: 0 });
      expect(data.output_text).toBe(await chatText(12, 'Be brief.'));
      expect(data.instructions).toBe('Be brief.');
    });

    it('says incomplete, with the reason, when max_output_tokens cuts it', async () => {
      const data = await client.responses.create({ model, input: PROMPT, max_output_tokens: 3, temperature: 0 });
      if (data.status === 'incomplete') {
        expect(data.incomplete_details).toEqual({ reason: 'max_output_tokens' });
        expect(data.usage?.output_tokens).toBe(3);
        expect(data.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
      } else {
        expect(data.usage?.output_tokens).toBeLessThan(3);
      }
      // Greedy, the model has more to say than 3 tokens for this prompt (see the first test).
      expect((await chatText(16))?.length).toBeGreaterThan(data.output_text.length);
    });

    it('treats top_p 0 as greedy', async () => {
      const data = await client.responses.create({ model, input: PROMPT, max_output_tokens: 12, top_p: 0, temperature: 1 });
      expect(data.output_text).toBe(await chatText(12));
    });

    it('answers JSON that parses with text.format json_object', async () => {
      for (const input of ['Describe a cat.', 'List three numbers.']) {
        const data = await client.responses.create({ model, input, max_output_tokens: 40, text: { format: { type: 'json_object' } } });
        expect(typeof JSON.parse(data.output_text)).toBe('object');
      }
    });

    it('serves a trainable model by name at its step, in the header and the field', async () => {
      await stack.json('POST', '/v1/preview/models', key, { entity: null, project: 'responses', name: 'agent', base_model: model, return_existing: true });
      const { data, response } = await client.responses.create({ model: 'wandb-artifact:///acme/responses/agent', input: 'Hi', max_output_tokens: 4 }).withResponse();
      expect(response.headers.get('x-trainyard-checkpoint-step')).toBe('0');
      expect((data as unknown as { checkpoint_step: number }).checkpoint_step).toBe(0);
    });
  });

  describe('responses.stream', () => {
    it('streams the documented event sequence, adding up to the same answer', async () => {
      const whole = await client.responses.create({ model, input: PROMPT, max_output_tokens: 16, temperature: 0 });
      const stream = client.responses.stream({ model, input: PROMPT, max_output_tokens: 16, temperature: 0 });
      const types: string[] = [];
      const sequence: number[] = [];
      let text = '';
      for await (const event of stream) {
        types.push(event.type);
        sequence.push(event.sequence_number);
        if (event.type === 'response.output_text.delta') text += event.delta;
      }
      const final = await stream.finalResponse();
      expect(text).toBe(whole.output_text);
      expect(final.output_text).toBe(whole.output_text);
      expect(final.usage).toEqual(whole.usage);
      expect(sequence).toEqual(sequence.map((_, i) => i));
      const deltas = types.filter((t) => t === 'response.output_text.delta').length;
      expect(deltas).toBeGreaterThan(1);
      expect(types).toEqual([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        ...Array(deltas).fill('response.output_text.delta'),
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        whole.status === 'completed' ? 'response.completed' : 'response.incomplete',
      ]);
    });

    it('gives a request refused before the stream opens its own status', async () => {
      const error = await failure(
        (async () => {
          for await (const _ of client.responses.stream({ model: 'no/such-model', input: 'Hi' })) void _;
        })(),
      );
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    });
  });

  describe('responses.parse with a zod schema', () => {
    it('returns output that parses into the schema', async () => {
      const Person = z.object({ name: z.string(), age: z.number().int() });
      let parsed = 0;
      for (const input of ['Describe a person.', 'Who wrote this?', 'Name someone.', 'A person, please.']) {
        const data = await client.responses.parse({ model, input, max_output_tokens: 200, text: { format: zodTextFormat(Person, 'person') } });
        // The SDK parses only a complete message; one cut by max_output_tokens still parses (constrained decoding).
        if (data.status === 'completed') {
          expect(Person.parse(data.output_parsed)).toEqual(data.output_parsed);
          parsed++;
        } else {
          expect(Person.parse(JSON.parse(data.output_text))).toEqual(JSON.parse(data.output_text));
        }
      }
      expect(parsed).toBeGreaterThan(0);
    });
  });

  describe('tools', () => {
    const tools: OpenAI.Responses.FunctionTool[] = [
      {
        type: 'function',
        name: 'get_weather',
        description: 'The weather in a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
        strict: true,
      },
    ];

    /** A function_call output item, when the model makes one, has the documented shape and valid arguments. */
    const expectWellFormedOutput = (data: OpenAI.Responses.Response) => {
      expect(data.output.length).toBeGreaterThan(0);
      for (const item of data.output) {
        if (item.type === 'function_call') {
          expect(item).toMatchObject({ name: 'get_weather', call_id: expect.any(String), id: expect.stringMatching(/^fc_/), status: 'completed' });
          expect(typeof JSON.parse(item.arguments).city).toBe('string');
        } else {
          expect(item.type).toBe('message');
        }
      }
    };

    it('accepts a conversation with function_call and function_call_output items', async () => {
      const data = await client.responses.create({
        model,
        tools,
        max_output_tokens: 24,
        input: [
          { role: 'user', content: 'Weather in Oslo?' },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
          { type: 'function_call_output', call_id: 'call_1', output: '{"temp": 3}' },
        ],
      });
      expect(['completed', 'incomplete']).toContain(data.status);
      expectWellFormedOutput(data);
    });

    it('answers tool_choice "required" and a named function in the documented shape', async () => {
      for (const tool_choice of ['required', { type: 'function', name: 'get_weather' }] as const) {
        const data = await client.responses.create({ model, tools, tool_choice, input: 'Weather in Oslo?', max_output_tokens: 96, parallel_tool_calls: false });
        expectWellFormedOutput(data);
        expect(data.tool_choice).toEqual(tool_choice);
        expect(data.parallel_tool_calls).toBe(false);
        // Forced calls are decoded under the function's schema: exactly one, whatever the weights.
        expect(data.output.filter((item) => item.type === 'function_call')).toHaveLength(1);
      }
    });

    it('streams a forced call as events that the stream helper accepts', async () => {
      const stream = client.responses.stream({ model, tools, tool_choice: 'required', input: 'Weather in Oslo?', max_output_tokens: 96 });
      const types = new Set<string>();
      for await (const event of stream) types.add(event.type);
      const final = await stream.finalResponse();
      expectWellFormedOutput(final);
      expect(final.output.some((item) => item.type === 'function_call')).toBe(true);
      expect([...types]).toEqual(expect.arrayContaining(['response.function_call_arguments.delta', 'response.function_call_arguments.done']));
    });
  });

  describe('refusals, in the OpenAI error envelope', () => {
    it('answers a previous_response_id or item_reference that names nothing stored with 404 naming it', async () => {
      const previous = await failure(client.responses.create({ model, input: 'Hi', previous_response_id: 'resp_123' }));
      expect(previous).toBeInstanceOf(OpenAI.NotFoundError);
      expect(previous?.param).toBe('previous_response_id');
      const reference = await failure(client.responses.create({ model, input: [{ role: 'user', content: 'Hi' }, { type: 'item_reference', id: 'msg_nope' }] }));
      expect(reference).toBeInstanceOf(OpenAI.NotFoundError);
      expect(reference?.param).toBe('input[1].id');
    });

    it.each([
      [{ temperature: 'hot' }, 'temperature'],
      [{ input: [] }, 'input'],
      [{ max_output_tokens: 1000 }, 'max_output_tokens'],
      [{ input: [{ type: 'function_call_output', call_id: 'call_9', output: 'x' }] }, 'input[0].call_id'],
      [{ tools: [{ type: 'web_search' }] }, 'tools[0].type'],
      [{ text: { format: { type: 'json_schema', name: 'x' } } }, 'text.format.schema'],
      [{ previous_response_id: 'resp_1', conversation: 'conv_1' }, 'conversation'],
      [{ top_logprobs: 2 }, 'top_logprobs'],
      [{ metadata: { k: 5 } }, 'metadata'],
    ])('refuses %j with 400 naming %s', async (extra, param) => {
      const error = await failure(client.responses.create({ model, input: 'Hi', ...(extra as object) } as OpenAI.Responses.ResponseCreateParamsNonStreaming));
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error?.param).toBe(param);
    });

    it('names max_output_tokens, not chat\'s max_tokens, when a schema\'s smallest document does not fit', async () => {
      const schema = { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' }, minItems: 8 } }, required: ['items'] };
      const error = await failure(
        client.responses.create({ model, input: 'Numbers.', max_output_tokens: 16, text: { format: { type: 'json_schema', name: 'numbers', schema, strict: true } } }),
      );
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error?.param).toBe('max_output_tokens');
      expect(error?.message).toMatch(/text\.format needs at least \d+ tokens for its smallest document, but max_output_tokens is 16$/);
    });

    it('refuses an input longer than the context window with 400 context_length_exceeded naming input', async () => {
      const error = await failure(client.responses.create({ model, input: 'word '.repeat(3000), max_output_tokens: 16 }));
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error?.code).toBe('context_length_exceeded');
      expect(error?.param).toBe('input');
      expect(error?.message).toMatch(/This model's maximum context length is 2048 tokens, but the input resulted in \d+ tokens, leaving no room for a reply\. Please reduce the length of the input\.$/);
    });

    it('answers an unknown model with 404 model_not_found', async () => {
      const error = await failure(client.responses.create({ model: 'no/such-model', input: 'Hi' }));
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(error?.code).toBe('model_not_found');
    });
  });

  describe("the AI SDK's default OpenAI provider (which calls the Responses API)", () => {
    const provider = () => createOpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key });

    it('generateText', async () => {
      const result = await generateText({ model: provider()(model), prompt: PROMPT, maxOutputTokens: 16, temperature: 0, maxRetries: 0 });
      expect(result.text).toBe(await chatText(16));
      expect(result.usage.inputTokens).toBeGreaterThan(0);
      expect(result.usage.outputTokens).toBeGreaterThan(0);
      expect(['stop', 'length']).toContain(result.finishReason);
    });

    it('streamText', async () => {
      const result = streamText({ model: provider()(model), prompt: PROMPT, maxOutputTokens: 16, temperature: 0, maxRetries: 0 });
      let text = '';
      for await (const part of result.textStream) text += part;
      expect(text).toBe(await chatText(16));
      expect((await result.usage).outputTokens).toBeGreaterThan(0);
    });

    it('generateObject', async () => {
      const schema = z.object({ name: z.string(), tags: z.array(z.string()) });
      const result = await generateObject({ model: provider()(model), schema, prompt: 'Describe a cat.', maxOutputTokens: 200, maxRetries: 0 });
      expect(schema.parse(result.object)).toEqual(result.object);
    });
  });
});
