import { createOpenAI } from '@ai-sdk/openai';
import { generateText, ModelMessage } from 'ai';
import OpenAI from 'openai';
import { failure, startOpenAIStack } from './support/openai-stack';
import type { Stack } from './support/stack';

// The Responses API's state through the whole stack: stored responses (retrieve, input_items,
// previous_response_id, delete), conversations, and output-text logprobs, with the official
// openai SDK, and the AI SDK's default provider holding a conversation with `store` left on.

describe('stored responses, conversations and logprobs with the openai SDK and the AI SDK', () => {
  let stack: Stack;
  let client: OpenAI;
  let model: string;
  let key: string;

  beforeAll(async () => {
    ({ stack, client, model, key } = await startOpenAIStack());
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const greedy = () => ({ model, max_output_tokens: 8, temperature: 0 });
  /** The same turns sent whole, nothing stored: what a continued response must equal, greedy. */
  const stateless = (input: OpenAI.Responses.ResponseInput) => client.responses.create({ ...greedy(), store: false, input });
  const rows = (table: 'stored_responses' | 'response_items' | 'conversations' | 'conversation_items', column: string, id: string) =>
    stack.withDatabase(async (db) => Number((await db.query(`SELECT count(*) AS n FROM ${table} WHERE ${column} = $1`, [id])).rows[0].n));

  describe('a stored response', () => {
    let first: OpenAI.Responses.Response;

    beforeAll(async () => {
      first = await client.responses.create({ ...greedy(), input: 'Say something.', metadata: { run: 'e2e' } });
    });

    it('is stored by default, and retrieved exactly as it was answered', async () => {
      expect(first).toMatchObject({ store: true, previous_response_id: null, metadata: { run: 'e2e' } });
      expect(await client.responses.retrieve(first.id)).toEqual(first);
    });

    it('lists its input items in OpenAI\'s shape, newest first unless asked otherwise', async () => {
      const page = await client.responses.inputItems.list(first.id);
      expect(page.data).toEqual([{ id: expect.stringMatching(/^msg_/), type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say something.' }], status: 'completed' }]);
    });

    it('is continued with previous_response_id: its input and output are in the prompt', async () => {
      const second = await client.responses.create({ ...greedy(), previous_response_id: first.id, input: 'And then?' });
      const whole = await stateless([
        { role: 'user', content: 'Say something.' },
        { role: 'assistant', content: first.output_text },
        { role: 'user', content: 'And then?' },
      ]);
      expect(second.previous_response_id).toBe(first.id);
      expect(second.output_text).toBe(whole.output_text);
      expect(second.usage?.input_tokens).toBe(whole.usage?.input_tokens);
      expect(second.usage?.input_tokens).toBeGreaterThan((first.usage?.input_tokens ?? 0) + 2);
      // Its input items are everything its model was given, the earlier turn first, oldest first when asked.
      const items = [];
      for await (const item of client.responses.inputItems.list(second.id, { order: 'asc', limit: 1 })) items.push(item);
      expect(items.map((item) => item.id)).toEqual([
        ...(await client.responses.inputItems.list(first.id)).data.map((item) => item.id),
        first.output[0].id,
        expect.stringMatching(/^msg_/),
      ]);
    });

    it('waits, streamed, until it is kept before the stream ends', async () => {
      const stream = client.responses.stream({ ...greedy(), input: 'Say something.' });
      const final = await stream.finalResponse();
      expect((await client.responses.retrieve(final.id)).output_text).toBe(final.output_text);
    });

    it('is deleted for good: its rows are gone, and retrieving or continuing it is a 404', async () => {
      const doomed = await client.responses.create({ ...greedy(), input: 'Forget this.' });
      const deleted = await stack.call('DELETE', `/v1/responses/${doomed.id}`, { key });
      expect(deleted).toMatchObject({ status: 200, body: { id: doomed.id, object: 'response.deleted', deleted: true } });
      expect(await rows('stored_responses', 'id', doomed.id)).toBe(0);
      expect(await rows('response_items', 'response_id', doomed.id)).toBe(0);
      expect(await failure(client.responses.retrieve(doomed.id))).toBeInstanceOf(OpenAI.NotFoundError);
      expect(await failure(client.responses.inputItems.list(doomed.id))).toBeInstanceOf(OpenAI.NotFoundError);
      const continued = await failure(client.responses.create({ ...greedy(), previous_response_id: doomed.id, input: 'Hi' }));
      expect(continued).toBeInstanceOf(OpenAI.NotFoundError);
      expect(continued?.param).toBe('previous_response_id');
      expect(await failure(client.responses.delete(doomed.id))).toBeInstanceOf(OpenAI.NotFoundError);
    });

    it('is not kept with store: false', async () => {
      const kept = await client.responses.create({ ...greedy(), store: false, input: 'Not this.' });
      expect((kept as unknown as { store: boolean }).store).toBe(false);
      expect(await rows('stored_responses', 'id', kept.id)).toBe(0);
      expect(await failure(client.responses.retrieve(kept.id))).toBeInstanceOf(OpenAI.NotFoundError);
    });
  });

  describe('a conversation', () => {
    it('is created with items, read as the earlier turns of a response made in it, which it then holds', async () => {
      const conversation = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'My name is Ada.' }], metadata: { topic: 'names' } });
      expect(conversation).toMatchObject({ id: expect.stringMatching(/^conv_/), object: 'conversation', metadata: { topic: 'names' } });
      const answer = await client.responses.create({ ...greedy(), conversation: conversation.id, input: 'What is my name?' });
      expect(answer.conversation).toEqual({ id: conversation.id });
      const whole = await stateless([
        { role: 'user', content: 'My name is Ada.' },
        { role: 'user', content: 'What is my name?' },
      ]);
      expect(answer.output_text).toBe(whole.output_text);

      const items = [];
      for await (const item of client.conversations.items.list(conversation.id, { order: 'asc', limit: 2 })) items.push(item);
      expect(items.map((item) => [item.type, (item as { role?: string }).role])).toEqual([
        ['message', 'user'],
        ['message', 'user'],
        ['message', 'assistant'],
      ]);
      expect(items[2].id).toBe(answer.output[0].id);
      // The next response in it reads all three.
      const next = await client.responses.create({ ...greedy(), conversation: { id: conversation.id }, input: 'Again?' });
      expect(next.usage?.input_tokens).toBeGreaterThan(answer.usage?.input_tokens ?? 0);
    });

    it('has its metadata replaced, items added, read and deleted, and is deleted with every item', async () => {
      const conversation = await client.conversations.create({});
      expect((await client.conversations.retrieve(conversation.id)).metadata).toEqual({});
      expect((await client.conversations.update(conversation.id, { metadata: { stage: 'two' } })).metadata).toEqual({ stage: 'two' });
      const added = await client.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'user', content: 'one' }, { type: 'message', role: 'user', content: 'two' }] });
      expect(added.data).toHaveLength(2);
      const [one, two] = added.data as OpenAI.Conversations.Message[];
      expect(await client.conversations.items.retrieve(two.id, { conversation_id: conversation.id })).toEqual(two);
      expect((await client.conversations.items.delete(one.id, { conversation_id: conversation.id })).id).toBe(conversation.id);
      expect((await client.conversations.items.list(conversation.id)).data.map((item) => item.id)).toEqual([two.id]);
      expect(await client.conversations.delete(conversation.id)).toEqual({ id: conversation.id, object: 'conversation.deleted', deleted: true });
      expect(await rows('conversation_items', 'conversation_id', conversation.id)).toBe(0);
      expect(await failure(client.conversations.retrieve(conversation.id))).toBeInstanceOf(OpenAI.NotFoundError);
      const inIt = await failure(client.responses.create({ ...greedy(), conversation: conversation.id, input: 'Hi' }));
      expect([inIt?.status, inIt?.param]).toEqual([404, 'conversation']);
    });
  });

  describe('logprobs', () => {
    it('are on the output text with include, as chat completions report them, and on its stream\'s text deltas', async () => {
      const request = { ...greedy(), input: 'Say something.', include: ['message.output_text.logprobs' as const], top_logprobs: 2, store: false };
      const data = await client.responses.create(request);
      const part = (data.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0] as OpenAI.Responses.ResponseOutputText;
      const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say something.' }], max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2 });
      const chatLogprobs = (chat.choices[0].logprobs?.content ?? []).map(({ token, logprob, bytes, top_logprobs }) => ({ token, logprob, bytes, top_logprobs }));
      expect(part.logprobs).toEqual(chatLogprobs);
      expect(part.logprobs?.length).toBe(data.usage?.output_tokens);

      const streamed: { token: string; logprob: number }[] = [];
      for await (const event of client.responses.stream(request)) {
        if (event.type === 'response.output_text.delta') streamed.push(...event.logprobs);
      }
      expect(streamed.map(({ token, logprob }) => ({ token, logprob }))).toEqual(chatLogprobs.map(({ token, logprob }) => ({ token, logprob })));
      expect((await client.responses.create({ ...greedy(), input: 'Say something.', store: false })).output[0]).toMatchObject({ content: [{ logprobs: [] }] });
    });
  });

  describe("the AI SDK's default provider, store left on", () => {
    it('holds a conversation over turns, sending the earlier answer as a reference to the stored item', async () => {
      const sent: Record<string, unknown>[] = [];
      const provider = createOpenAI({
        baseURL: `${stack.baseUrl}/v1`,
        apiKey: key,
        fetch: async (url, init) => {
          if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
          return fetch(url, init);
        },
      });
      const settings = { model: provider(model), maxOutputTokens: 8, temperature: 0, maxRetries: 0 };
      const messages: ModelMessage[] = [{ role: 'user', content: 'Say something.' }];
      const turn1 = await generateText({ ...settings, messages });
      messages.push(...turn1.response.messages, { role: 'user', content: 'And then?' });
      const turn2 = await generateText({ ...settings, messages });

      expect(sent[1]['input']).toEqual(expect.arrayContaining([{ type: 'item_reference', id: expect.stringMatching(/^msg_/) }]));
      const whole = await stateless([
        { role: 'user', content: 'Say something.' },
        { role: 'assistant', content: turn1.text },
        { role: 'user', content: 'And then?' },
      ]);
      expect(turn2.text).toBe(whole.output_text);
    });
  });
});
