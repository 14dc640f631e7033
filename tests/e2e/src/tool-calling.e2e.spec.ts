import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, jsonSchema, streamText, tool } from 'ai';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { zodFunction } from 'openai/helpers/zod';
import { z } from 'zod';
import { startOpenAIStack } from './support/openai-stack';
import type { Stack } from './support/stack';

// Tool calling through the whole stack with the clients agents are written with: the official
// openai SDK, the Vercel AI SDK (openai.chat) and LangChain's ChatOpenAI, on the embedded
// random-weight model. Whatever the model's weights, a forced call names a declared function
// and its arguments validate against that function's schema.

const WEATHER_PARAMETERS = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 24 },
    days: { type: 'integer', minimum: 1, maximum: 7 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
  },
  required: ['city', 'days', 'unit'],
  additionalProperties: false,
};
const ADD_PARAMETERS = {
  type: 'object',
  properties: { a: { type: 'integer' }, b: { type: 'integer' } },
  required: ['a', 'b'],
  additionalProperties: false,
};
const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather forecast', parameters: WEATHER_PARAMETERS } },
  { type: 'function', function: { name: 'add', description: 'Adds two integers', parameters: ADD_PARAMETERS } },
];
const ajv = new Ajv({ strict: false });
const VALIDATE: Record<string, ReturnType<typeof ajv.compile>> = { get_weather: ajv.compile(WEATHER_PARAMETERS), add: ajv.compile(ADD_PARAMETERS) };
const MESSAGES: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Oslo this week?' }];

/** Every call names one of `names` and its arguments validate against that function's schema. */
function expectValidCalls(calls: { function: { name: string; arguments: string } }[] | undefined, names = ['get_weather', 'add']) {
  expect(calls?.length).toBeGreaterThan(0);
  for (const call of calls ?? []) {
    expect(names).toContain(call.function.name);
    const args = JSON.parse(call.function.arguments);
    expect({ args, valid: VALIDATE[call.function.name](args) }).toEqual({ args, valid: true });
  }
}

describe('tool calling with real clients', () => {
  let stack: Stack;
  let client: OpenAI;
  let model: string;
  let key: string;

  beforeAll(async () => {
    ({ stack, client, model, key } = await startOpenAIStack());
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const create = (extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming>) =>
    client.chat.completions.create({ model, messages: MESSAGES, tools: TOOLS, max_tokens: 96, temperature: 1, ...extra });

  describe('openai', () => {
    it('tool_choice "required": calls of declared functions, valid arguments, finish_reason tool_calls, a logprob per token', async () => {
      for (const seed of [1, 2, 3]) {
        const reply = await create({ tool_choice: 'required', seed, logprobs: true });
        const [choice] = reply.choices;
        expect(choice.finish_reason).toBe('tool_calls');
        expect(choice.message.content).toBeNull();
        expectValidCalls(choice.message.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[]);
        const ids = choice.message.tool_calls?.map((c) => c.id) ?? [];
        expect(new Set(ids).size).toBe(ids.length);
        expect(choice.logprobs?.content).toHaveLength(reply.usage?.completion_tokens ?? -1);
      }
    });

    it('a named function: only that function; parallel_tool_calls false: exactly one call', async () => {
      const reply = await create({ tool_choice: { type: 'function', function: { name: 'add' } }, parallel_tool_calls: false, seed: 4, max_tokens: 200 });
      const calls = reply.choices[0].message.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[];
      expect(calls).toHaveLength(1);
      expectValidCalls(calls, ['add']);
    });

    it('"auto" (the default with tools) answers in text or with valid calls', async () => {
      for (const seed of [5, 6]) {
        const [choice] = (await create({ seed })).choices;
        if (choice.message.tool_calls?.length) {
          expect(choice.finish_reason).toBe('tool_calls');
          expectValidCalls(choice.message.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[]);
        } else {
          expect(['stop', 'length']).toContain(choice.finish_reason);
          expect(typeof choice.message.content).toBe('string');
        }
      }
    });

    it('"none" describes the tools to the model but makes no call', async () => {
      const none = await create({ tool_choice: 'none', seed: 13 });
      const required = await create({ tool_choice: 'required', seed: 13 });
      expect(none.choices[0].message.tool_calls ?? []).toEqual([]);
      expect(['stop', 'length']).toContain(none.choices[0].finish_reason);
      // The same prompt both ways: the template rendered the tools for "none" too.
      expect(none.usage?.prompt_tokens).toBe(required.usage?.prompt_tokens);
      const without = await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 4 });
      expect(none.usage?.prompt_tokens).toBeGreaterThan(without.usage?.prompt_tokens ?? Infinity);
    });

    it('streams tool calls in OpenAI deltas that the SDK accumulates into the same calls, logprobs included', async () => {
      const stream = client.chat.completions.stream({
        model,
        messages: MESSAGES,
        tools: TOOLS,
        tool_choice: 'required',
        max_tokens: 96,
        temperature: 1,
        seed: 7,
        logprobs: true,
        stream_options: { include_usage: true },
      });
      const firstPieces: OpenAI.Chat.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
      stream.on('chunk', (chunk) => {
        for (const call of chunk.choices[0]?.delta.tool_calls ?? []) if (call.id) firstPieces.push(call);
      });
      const final = await stream.finalChatCompletion();
      const [choice] = final.choices;
      expect(choice.finish_reason).toBe('tool_calls');
      const calls = choice.message.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[];
      expectValidCalls(calls);
      // Each call's first delta: index, id, type and name, with empty arguments.
      expect(firstPieces.map((p) => ({ index: p.index, id: p.id, type: p.type, name: p.function?.name, arguments: p.function?.arguments }))).toEqual(
        calls.map((c, index) => ({ index, id: c.id, type: 'function', name: c.function.name, arguments: '' })),
      );
      expect(choice.logprobs?.content?.length).toBe(final.usage?.completion_tokens);
      // The same seed without streaming gives the same calls.
      const whole = await create({ tool_choice: 'required', seed: 7, logprobs: true });
      expect((whole.choices[0].message.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[]).map((c) => c.function)).toEqual(calls.map((c) => c.function));
    });

    it('runTools calls the named function with the parsed arguments and sends its result back', async () => {
      const seen: unknown[] = [];
      const runner = client.chat.completions.runTools({
        model,
        messages: MESSAGES,
        max_tokens: 96,
        seed: 8,
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather forecast',
              parameters: WEATHER_PARAMETERS,
              parse: JSON.parse,
              function: (args: unknown) => {
                seen.push(args);
                return { forecast: 'sunny' };
              },
            },
          },
        ],
      });
      const result = await runner.finalFunctionToolCallResult();
      expect(result).toBe(JSON.stringify({ forecast: 'sunny' }));
      expect(seen).toHaveLength(1);
      expect(VALIDATE['get_weather'](seen[0])).toBe(true);
    });

    it('zodFunction + parse(): parsed_arguments that satisfy the zod schema', async () => {
      const Weather = z.object({ city: z.string(), days: z.number().int().min(1).max(7), unit: z.enum(['celsius', 'fahrenheit']) });
      const reply = await client.chat.completions.parse({
        model,
        messages: MESSAGES,
        max_tokens: 96,
        seed: 9,
        tools: [zodFunction({ name: 'get_weather', parameters: Weather })],
        tool_choice: 'required',
      });
      const call = reply.choices[0].message.tool_calls?.[0] as { function: { name: string; parsed_arguments: unknown } };
      expect(call.function.name).toBe('get_weather');
      expect(Weather.safeParse(call.function.parsed_arguments).success).toBe(true);
    });

    it('refuses before any work a tool_choice naming an undeclared function, and a schema that cannot be compiled', async () => {
      const undeclared = await create({ tool_choice: { type: 'function', function: { name: 'nope' } } }).catch((e: unknown) => e);
      expect(undeclared).toBeInstanceOf(OpenAI.APIError);
      expect(undeclared).toMatchObject({ status: 400, param: 'tool_choice' });
      const broken = await create({
        tool_choice: 'required',
        tools: [TOOLS[0], { type: 'function', function: { name: 'bad', parameters: { type: 'object', properties: { x: { type: 'no-such-type' } } } } }],
      }).catch((e: unknown) => e);
      expect(broken).toMatchObject({ status: 400, param: 'tools[1].function.parameters' });
    });
  });

  describe('the AI SDK (openai.chat)', () => {
    const provider = () => createOpenAI({ baseURL: `${stack.baseUrl}/v1`, apiKey: key });
    const weather = tool({ description: 'Weather forecast', inputSchema: jsonSchema(WEATHER_PARAMETERS as Parameters<typeof jsonSchema>[0]) });
    const add = tool({ description: 'Adds two integers', inputSchema: jsonSchema(ADD_PARAMETERS as Parameters<typeof jsonSchema>[0]) });

    it("generateText with toolChoice 'required' returns valid tool calls", async () => {
      const result = await generateText({
        model: provider().chat(model),
        prompt: 'What is the weather in Oslo?',
        tools: { get_weather: weather, add },
        toolChoice: 'required',
        maxOutputTokens: 96,
        seed: 10,
        maxRetries: 0,
      });
      expect(result.finishReason).toBe('tool-calls');
      expectValidCalls(result.toolCalls.map((c) => ({ function: { name: c.toolName, arguments: JSON.stringify(c.input) } })));
    });

    it('streamText streams the same kind of calls as tool-call parts', async () => {
      const result = streamText({
        model: provider().chat(model),
        prompt: 'What is the weather in Oslo?',
        tools: { get_weather: weather, add },
        toolChoice: { type: 'tool', toolName: 'get_weather' },
        maxOutputTokens: 96,
        seed: 11,
        maxRetries: 0,
      });
      const kinds = new Set<string>();
      for await (const part of result.fullStream) kinds.add(part.type);
      expect(kinds).toContain('tool-input-start');
      expect(kinds).toContain('tool-input-delta');
      expectValidCalls((await result.toolCalls).map((c) => ({ function: { name: c.toolName, arguments: JSON.stringify(c.input) } })), ['get_weather']);
    });

    it('generateObject with a zod schema returns an object the schema accepts', async () => {
      const schema = z.object({ city: z.string(), days: z.number().int().min(1).max(7) });
      const { object } = await generateObject({ model: provider().chat(model), schema, prompt: 'A city and a number of days.', maxOutputTokens: 96, seed: 12, maxRetries: 0 });
      expect(schema.safeParse(object).success).toBe(true);
    });
  });

  describe('LangChain (ChatOpenAI)', () => {
    const chat = () => new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: `${stack.baseUrl}/v1` }, maxTokens: 96, temperature: 1, maxRetries: 0 });
    const asCalls = (calls: { name: string; args: Record<string, unknown> }[] | undefined) =>
      (calls ?? []).map((c) => ({ function: { name: c.name, arguments: JSON.stringify(c.args) } }));

    it("bindTools with tool_choice 'any' and with a named tool", async () => {
      const any = await chat().bindTools(TOOLS, { tool_choice: 'any' }).invoke('What is the weather in Oslo?');
      expectValidCalls(asCalls(any.tool_calls));
      const named = await chat().bindTools(TOOLS, { tool_choice: 'add' }).invoke('Add two numbers.');
      expectValidCalls(asCalls(named.tool_calls), ['add']);
    });

    it("withStructuredOutput({ method: 'functionCalling' }) returns the schema's object", async () => {
      const schema = z.object({ city: z.string(), days: z.number().int().min(1).max(7) });
      const out = await chat().withStructuredOutput(schema, { method: 'functionCalling', name: 'forecast_request' }).invoke('A city and a number of days.');
      expect(schema.safeParse(out).success).toBe(true);
    });
  });
});
