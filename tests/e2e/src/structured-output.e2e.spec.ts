import { createOpenAI } from '@ai-sdk/openai';
import type { AIMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { APICallError, generateObject, generateText, jsonSchema, tool } from 'ai';
import { createAgent, providerStrategy } from 'langchain';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { failure, startOpenAIStack } from './support/openai-stack';
import type { Stack } from './support/stack';

// Structured output as each client reads it, on the embedded random-weight model: the openai
// SDK's parse(), the AI SDK's default provider (Responses API), LangChain's ChatOpenAI
// (withStructuredOutput, createAgent with a provider strategy). A document the grammar closes
// at the token budget is complete ("stop", "completed"), its numbers parse to finite values and
// its integers to safe ones, and a tool or format the grammar cannot honour is a 400 naming it.

const Trip = z.object({ destination: z.string(), days: z.number().int() });
// zod 4: z.number() refuses Infinity, .int() an integer past 2^53.
const Amounts = z.object({ amount: z.number(), count: z.number().int(), ratio: z.number() });
/** Sampled runs, seeded where the API takes a seed. */
const SEEDS = [1, 2, 3, 4, 5];
const BUDGET = 64;

describe('structured output with the openai SDK, the AI SDK and LangChain', () => {
  let stack: Stack;
  let client: OpenAI;
  let model: string;
  let key: string;
  let baseURL: string;

  beforeAll(async () => {
    ({ stack, client, model, key, baseURL } = await startOpenAIStack());
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const chatOpenAI = (extra: Partial<ConstructorParameters<typeof ChatOpenAI>[0] & object> = {}) =>
    new ChatOpenAI({ model, apiKey: key, configuration: { baseURL }, maxTokens: BUDGET, temperature: 1, maxRetries: 0, ...extra });
  const aiSdk = () => createOpenAI({ baseURL, apiKey: key });

  describe('a json_schema document closed at the token budget is complete', () => {
    /** A few tokens past the smallest Trip document: the grammar, not the random weights, ends most documents. */
    let tight: number;

    beforeAll(async () => {
      const refused = await failure(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1, response_format: zodResponseFormat(Trip, 'trip') }));
      tight = Number(/needs at least (\d+) tokens/.exec(refused?.message ?? '')?.[1]) + 4;
      expect(tight).toBeGreaterThan(4);
    });

    it('openai: chat parse() finishes with "stop" and parses; responses.parse is "completed"', async () => {
      const atBudget = { chat: 0, responses: 0 };
      for (const seed of SEEDS) {
        const chat = await client.chat.completions.parse({
          model,
          messages: [{ role: 'user', content: 'Plan a trip.' }],
          max_tokens: tight,
          temperature: 1,
          seed,
          response_format: zodResponseFormat(Trip, 'trip'),
        });
        expect(chat.choices[0].finish_reason).toBe('stop');
        expect(Trip.parse(chat.choices[0].message.parsed)).toEqual(chat.choices[0].message.parsed);
        if (chat.usage?.completion_tokens === tight) atBudget.chat++;

        const response = await client.responses.parse({ model, input: 'Plan a trip.', max_output_tokens: tight, temperature: 1, text: { format: zodTextFormat(Trip, 'trip') } });
        expect([response.status, response.incomplete_details]).toEqual(['completed', null]);
        expect(Trip.parse(response.output_parsed)).toEqual(response.output_parsed);
        if (response.usage?.output_tokens === tight) atBudget.responses++;
      }
      // The random weights write long strings: the grammar, not the model, ends these documents.
      expect(atBudget.chat).toBeGreaterThan(0);
      expect(atBudget.responses).toBeGreaterThan(0);
    });

    it("the AI SDK's default provider: generateObject finishes with 'stop'", async () => {
      let atBudget = 0;
      for (const _ of SEEDS) {
        const result = await generateObject({ model: aiSdk()(model), schema: Trip, prompt: 'Plan a trip.', maxOutputTokens: tight, temperature: 1, maxRetries: 0 });
        expect(result.finishReason).toBe('stop');
        expect(Trip.parse(result.object)).toEqual(result.object);
        if (result.usage.outputTokens === tight) atBudget++;
      }
      expect(atBudget).toBeGreaterThan(0);
    });

    it('LangChain: withStructuredOutput (json schema) keeps every document, over chat completions and the Responses API', async () => {
      for (const useResponsesApi of [false, true]) {
        const structured = chatOpenAI({ useResponsesApi, maxTokens: tight }).withStructuredOutput(Trip, { name: 'trip', method: 'jsonSchema', includeRaw: true });
        let atBudget = 0;
        for (const _ of SEEDS) {
          const { parsed, raw } = await structured.invoke('Plan a trip.');
          expect(Trip.parse(parsed)).toEqual(parsed);
          const metadata = raw.response_metadata as Record<string, unknown>;
          expect(metadata['finish_reason'] ?? metadata['status']).toMatch(/^(stop|completed)$/);
          if ((raw as AIMessage).usage_metadata?.output_tokens === tight) atBudget++;
        }
        expect(atBudget).toBeGreaterThan(0);
      }
    });

    it('LangChain: createAgent with a provider strategy answers the structured response', async () => {
      const agent = createAgent({ model: chatOpenAI({ maxTokens: tight }), tools: [], responseFormat: providerStrategy(Trip) });
      for (const _ of SEEDS.slice(0, 3)) {
        const result = await agent.invoke({ messages: [{ role: 'user', content: 'Plan a trip.' }] });
        expect(Trip.parse(result.structuredResponse)).toEqual(result.structuredResponse);
      }
    });
  });

  describe('numbers parse to finite values, integers to safe ones', () => {
    const AMOUNT_PARAMETERS = {
      type: 'object',
      properties: { amount: { type: 'number' }, count: { type: 'integer' }, ratio: { type: 'number' } },
      required: ['amount', 'count', 'ratio'],
      additionalProperties: false,
    };

    it('openai: chat json_schema, tool arguments and responses.parse', async () => {
      for (const seed of SEEDS) {
        const chat = await client.chat.completions.parse({ model, messages: [{ role: 'user', content: 'Numbers.' }], max_tokens: BUDGET, temperature: 1, seed, response_format: zodResponseFormat(Amounts, 'amounts') });
        expect(Amounts.safeParse(chat.choices[0].message.parsed).success).toBe(true);

        const call = await client.chat.completions.parse({
          model,
          messages: [{ role: 'user', content: 'Numbers.' }],
          max_tokens: BUDGET,
          temperature: 1,
          seed,
          tools: [zodFunction({ name: 'record', parameters: Amounts })],
          tool_choice: 'required',
        });
        const args = (call.choices[0].message.tool_calls?.[0] as { function: { parsed_arguments: unknown } }).function.parsed_arguments;
        expect(Amounts.safeParse(args).success).toBe(true);

        const response = await client.responses.parse({ model, input: 'Numbers.', max_output_tokens: BUDGET, temperature: 1, text: { format: zodTextFormat(Amounts, 'amounts') } });
        expect(Amounts.safeParse(response.output_parsed).success).toBe(true);
      }
    });

    it('the AI SDK: generateObject and tool inputs keep every field a number', async () => {
      for (const _ of SEEDS) {
        const { object } = await generateObject({ model: aiSdk()(model), schema: Amounts, prompt: 'Numbers.', maxOutputTokens: BUDGET, temperature: 1, maxRetries: 0 });
        expect(Amounts.safeParse(object).success).toBe(true);
        const { toolCalls } = await generateText({
          model: aiSdk()(model),
          prompt: 'Numbers.',
          tools: { record: tool({ inputSchema: jsonSchema(AMOUNT_PARAMETERS as Parameters<typeof jsonSchema>[0]) }) },
          toolChoice: 'required',
          maxOutputTokens: BUDGET,
          temperature: 1,
          maxRetries: 0,
        });
        expect(toolCalls.map((c) => Amounts.safeParse(c.input).success)).toEqual([true]);
      }
    });

    it('LangChain: withStructuredOutput', async () => {
      const structured = chatOpenAI().withStructuredOutput(Amounts, { name: 'amounts', method: 'jsonSchema' });
      for (const _ of SEEDS) expect(Amounts.safeParse(await structured.invoke('Numbers.')).success).toBe(true);
    });

    it('openai: ranges zod writes (min, max, gt, lt) hold every value, negative ones included', async () => {
      const Reading = z.object({ celsius: z.number().int().min(-40).max(-1), share: z.number().gt(0).lt(1), floor: z.number().int().gte(-3).lte(12) });
      for (const seed of SEEDS) {
        const chat = await client.chat.completions.parse({ model, messages: [{ role: 'user', content: 'Read it.' }], max_tokens: BUDGET, temperature: 1, seed, response_format: zodResponseFormat(Reading, 'reading') });
        expect([chat.choices[0].message.content, Reading.safeParse(chat.choices[0].message.parsed).success]).toEqual([chat.choices[0].message.content, true]);
      }
      const empty = await failure(
        client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'Hi' }],
          max_tokens: BUDGET,
          response_format: { type: 'json_schema', json_schema: { name: 'none', schema: { type: 'object', properties: { n: { type: 'integer', exclusiveMinimum: 1, exclusiveMaximum: 2 } }, required: ['n'] } } },
        }),
      );
      expect([empty?.status, empty?.param]).toEqual([400, 'response_format']);
      expect(empty?.message).toMatch(/holds no integer/);
    });
  });

  describe('what the grammar cannot honour is a 400 naming the field, as OpenAI writes it', () => {
    const stringTool = { type: 'function' as const, function: { name: 'shout', parameters: { type: 'string' } } };

    it('openai: tool parameters that are not an object schema, and json_schema without a schema', async () => {
      const chatTool = await failure(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], tools: [zodFunction({ name: 'ok', parameters: Trip }), stringTool] }));
      expect(chatTool).toBeInstanceOf(OpenAI.BadRequestError);
      expect(chatTool?.param).toBe('tools[1].function.parameters');
      expect(chatTool?.message).toMatch(/type "object"/);

      const responsesTool = await failure(client.responses.create({ model, input: 'Hi', tools: [{ type: 'function', name: 'shout', parameters: { type: 'string' }, strict: false }] }));
      expect([responsesTool?.status, responsesTool?.param]).toEqual([400, 'tools[0].parameters']);

      const noSchema = await failure(
        client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], response_format: { type: 'json_schema', json_schema: { name: 'x' } } }),
      );
      expect([noSchema?.status, noSchema?.param]).toEqual([400, 'response_format.json_schema.schema']);
    });

    it('the AI SDK: a tool whose input is not an object is an APICallError with status 400', async () => {
      const error = await generateText({
        model: aiSdk()(model),
        prompt: 'Hi',
        tools: { shout: tool({ inputSchema: jsonSchema({ type: 'string' } as Parameters<typeof jsonSchema>[0]) }) },
        maxOutputTokens: 8,
        maxRetries: 0,
      }).catch((e: unknown) => e);
      expect(APICallError.isInstance(error)).toBe(true);
      expect((error as APICallError).statusCode).toBe(400);
      expect(JSON.parse((error as APICallError).responseBody ?? '{}').error.param).toBe('tools[0].parameters');
    });

    it('LangChain: bindTools with such a tool is refused with the same param', async () => {
      const error = await chatOpenAI().bindTools([stringTool]).invoke('Hi').catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 400, param: 'tools[0].function.parameters' });
    });
  });
});
