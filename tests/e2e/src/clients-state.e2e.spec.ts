import { createOpenAI, OpenAIResponsesProviderOptions } from '@ai-sdk/openai';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { APICallError, generateText, ModelMessage, stepCountIs, tool } from 'ai';
import OpenAI, { toFile } from 'openai';
import { z } from 'zod';
import { startOpenAIStack, waitForFineTuningJob, waitForTrainingJob } from './support/openai-stack';
import type { Stack } from './support/stack';

// The Responses API's state and the training it feeds, as the AI SDK's default provider and
// LangChain's ChatOpenAI (useResponsesApi) drive them, store left on: multi-turn conversations
// and agent loops, previous_response_id, conversations, deletion; a fine-tuned model served to
// both; their stored turns exported as ART groups that an RL job trains on; and another
// entity continuing none of it. (The openai SDK's side: stored-responses, fine-tuning and
// stored-completions specs.)

const line = (q: string, a: string) => JSON.stringify({ messages: [{ role: 'user', content: q }, { role: 'assistant', content: a }] });
const TRAIN = [line('Capital of France?', 'Paris'), line('Capital of Italy?', 'Rome'), line('Capital of Spain?', 'Madrid'), line('Capital of Peru?', 'Lima')].join('\n') + '\n';

describe('stored responses, fine-tuned models and exports with the AI SDK and LangChain', () => {
  let stack: Stack;
  let client: OpenAI;
  let model: string;
  let key: string;
  let baseURL: string;
  let otherKey: string;
  /** A trainable model: its replies carry the token ids and logprobs an RL job needs. */
  let trainable: { id: string; name: string };
  const run = `clients-${Date.now()}`;

  beforeAll(async () => {
    ({ stack, client, model, key, baseURL } = await startOpenAIStack());
    otherKey = (await stack.createKey('globex')).key;
    const created = await stack.json<{ id: string }>('POST', '/v1/preview/models', key, { entity: null, project: 'clients', name: 'agent', base_model: model, return_existing: true });
    trainable = { id: created.id, name: 'wandb-artifact:///acme/clients/agent' };
  }, 120_000);

  afterAll(() => stack?.stop(), 60_000);

  const greedy = { max_output_tokens: 8, temperature: 0 };
  /** The same turns sent whole, nothing stored: what a continued response must equal, greedy. */
  const stateless = (input: OpenAI.Responses.ResponseInput, as = model) => client.responses.create({ model: as, ...greedy, store: false, input });

  describe("the AI SDK's default provider", () => {
    const provider = (apiKey = key) => createOpenAI({ baseURL, apiKey });
    const settings = () => ({ model: provider()(model), maxOutputTokens: 8, temperature: 0, maxRetries: 0 });
    const openai = (options: OpenAIResponsesProviderOptions) => ({ providerOptions: { openai: options } });
    const responseId = (result: { providerMetadata?: Record<string, Record<string, unknown>> }) => result.providerMetadata?.['openai']?.['responseId'] as string;

    it('stores a response, which is retrieved and continued with previousResponseId, the earlier turn in the prompt', async () => {
      const first = await generateText({ ...settings(), prompt: 'Say something.' });
      const id = responseId(first);
      expect((await client.responses.retrieve(id)).output_text).toBe(first.text);

      const second = await generateText({ ...settings(), prompt: 'And then?', ...openai({ previousResponseId: id }) });
      const whole = await stateless([
        { role: 'user', content: 'Say something.' },
        { role: 'assistant', content: first.text },
        { role: 'user', content: 'And then?' },
      ]);
      expect(second.text).toBe(whole.output_text);
      expect(second.usage.inputTokens).toBe(whole.usage?.input_tokens);
      expect((await client.responses.retrieve(responseId(second))).previous_response_id).toBe(id);
    });

    it('runs an agent loop over stored turns: the tool call goes back as a reference and its result is read', async () => {
      const seen: unknown[] = [];
      const result = await generateText({
        ...settings(),
        maxOutputTokens: 48,
        prompt: 'Weather in Oslo?',
        tools: {
          get_weather: tool({
            inputSchema: z.object({ city: z.string() }),
            execute: async (input) => {
              seen.push(input);
              return { temperature: 3 };
            },
          }),
        },
        toolChoice: 'required',
        stopWhen: stepCountIs(2),
      });
      expect(result.steps).toHaveLength(2);
      expect(seen.length).toBeGreaterThan(0);
      // The second step's input: the stored call by reference, then its output.
      const second = await client.responses.inputItems.list(responseId(result.steps[1]), { order: 'asc' });
      expect(second.data.map((item) => item.type)).toEqual(expect.arrayContaining(['function_call', 'function_call_output']));
    });

    it('writes into a conversation, which lists the turn', async () => {
      const conversation = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'My name is Ada.' }] });
      const answer = await generateText({ ...settings(), prompt: 'What is my name?', ...openai({ conversation: conversation.id }) });
      const items = await client.conversations.items.list(conversation.id, { order: 'asc' });
      expect(items.data.map((item) => (item as { role?: string }).role)).toEqual(['user', 'user', 'assistant']);
      const whole = await stateless([
        { role: 'user', content: 'My name is Ada.' },
        { role: 'user', content: 'What is my name?' },
      ]);
      expect(answer.text).toBe(whole.output_text);
    });

    it('continues no deleted response, and none of another entity', async () => {
      const first = await generateText({ ...settings(), prompt: 'Forget this.' });
      const id = responseId(first);
      const theirs = await generateText({ ...settings(), model: provider(otherKey)(model), prompt: 'Hi', ...openai({ previousResponseId: id }) }).catch((e: unknown) => e);
      expect([APICallError.isInstance(theirs), (theirs as APICallError).statusCode]).toEqual([true, 404]);
      await client.responses.delete(id);
      const gone = await generateText({ ...settings(), prompt: 'Hi', ...openai({ previousResponseId: id }) }).catch((e: unknown) => e);
      expect((gone as APICallError).statusCode).toBe(404);
      expect(JSON.parse((gone as APICallError).responseBody ?? '{}').error.param).toBe('previous_response_id');
    });
  });

  describe("LangChain's ChatOpenAI with useResponsesApi", () => {
    const chat = (extra: Record<string, unknown> = {}) =>
      new ChatOpenAI({ model, apiKey: key, configuration: { baseURL }, useResponsesApi: true, maxTokens: 8, temperature: 0, maxRetries: 0, ...extra });

    it('holds a multi-turn conversation, sending the stored output back', async () => {
      const first = await chat().invoke([new HumanMessage('Say something.')]);
      const id = first.response_metadata['id'] as string;
      expect(id).toMatch(/^resp_/);
      expect((await client.responses.retrieve(id)).output_text).toBe(first.text);
      const second = await chat().invoke([new HumanMessage('Say something.'), first, new HumanMessage('And then?')]);
      const whole = await stateless([
        { role: 'user', content: 'Say something.' },
        { role: 'assistant', content: first.text },
        { role: 'user', content: 'And then?' },
      ]);
      expect(second.text).toBe(whole.output_text);
    });

    it('continues a stored response with previous_response_id, the earlier turn in the prompt', async () => {
      const first = await chat().invoke('Say something.');
      const id = first.response_metadata['id'] as string;
      const second = await chat().invoke([new HumanMessage('And then?')], { previous_response_id: id });
      const whole = await stateless([
        { role: 'user', content: 'Say something.' },
        { role: 'assistant', content: first.text },
        { role: 'user', content: 'And then?' },
      ]);
      expect(second.text).toBe(whole.output_text);
      expect(second.usage_metadata?.input_tokens).toBe(whole.usage?.input_tokens);
    });

    it('runs a tool loop: the call and its result go back as items', async () => {
      const weather = langchainTool(async () => JSON.stringify({ temperature: 3 }), { name: 'get_weather', description: 'Weather', schema: z.object({ city: z.string() }) });
      // By name: LangChain's Responses path sends an object tool_choice, but drops "any" ("required").
      const bound = chat({ maxTokens: 48 }).bindTools([weather], { tool_choice: 'get_weather' });
      const call = await bound.invoke('Weather in Oslo?');
      expect(call.tool_calls?.length).toBeGreaterThan(0);
      const results = await Promise.all((call.tool_calls ?? []).map((c) => weather.invoke(c)));
      const answer = await chat({ maxTokens: 8 }).bindTools([weather]).invoke([new HumanMessage('Weather in Oslo?'), call, ...results]);
      expect(answer).toBeInstanceOf(AIMessage);
      const items = await client.responses.inputItems.list(answer.response_metadata['id'] as string, { order: 'asc' });
      expect(items.data.map((item) => item.type)).toEqual(['message', ...(call.tool_calls ?? []).map(() => 'function_call'), ...(call.tool_calls ?? []).map(() => 'function_call_output')]);
    });

    it('writes into a conversation, and continues no deleted response nor one of another entity', async () => {
      const conversation = await client.conversations.create({});
      await chat({ modelKwargs: { conversation: conversation.id } }).invoke('Hello.');
      expect((await client.conversations.items.list(conversation.id)).data).toHaveLength(2);

      const first = await chat().invoke('Forget this.');
      const id = first.response_metadata['id'] as string;
      const theirs = await chat({ apiKey: otherKey }).invoke('Hi', { previous_response_id: id }).catch((e: unknown) => e);
      expect(theirs).toMatchObject({ status: 404, param: 'previous_response_id' });
      await client.responses.delete(id);
      expect(await chat().invoke('Hi', { previous_response_id: id }).catch((e: unknown) => e)).toMatchObject({ status: 404, param: 'previous_response_id' });
    });
  });

  it('stored conversations of both clients are exported as one ART group that an RL job trains on; another entity exports none', async () => {
    const meta = (trajectory: string) => ({ run, group_id: 'clients', trajectory_id: trajectory });
    // The AI SDK: two turns, the second carrying the reward.
    const aiSdk = createOpenAI({ baseURL, apiKey: key })(trainable.name);
    // Greedy: the AI SDK leaves an empty answer out of the next turn's messages, which then
    // would not go on from this turn (a sampled answer can be empty).
    const turn1 = await generateText({ model: aiSdk, prompt: 'Say something.', temperature: 0, maxOutputTokens: 6, maxRetries: 0, providerOptions: { openai: { metadata: meta('ai-sdk') } } });
    expect(turn1.text).not.toBe('');
    const messages: ModelMessage[] = [{ role: 'user', content: 'Say something.' }, ...turn1.response.messages, { role: 'user', content: 'And then?' }];
    await generateText({ model: aiSdk, messages, maxOutputTokens: 6, maxRetries: 0, providerOptions: { openai: { metadata: { ...meta('ai-sdk'), reward: '1' } } } });
    // LangChain: the same, continued with previous_response_id.
    const lc = (metadata: Record<string, string>) =>
      new ChatOpenAI({ model: trainable.name, apiKey: key, configuration: { baseURL }, useResponsesApi: true, maxTokens: 6, maxRetries: 0, modelKwargs: { metadata } });
    const first = await lc(meta('langchain')).invoke('Say anything.');
    await lc({ ...meta('langchain'), reward: '0' }).invoke('And then?', { previous_response_id: first.response_metadata['id'] as string });

    type ArtExport = { trajectory_groups: { trajectories: { reward: number; metadata: Record<string, string>; messages_and_choices: Record<string, unknown>[] }[] }[]; skipped: unknown[] };
    const exported = await stack.json<ArtExport>('POST', '/v1/responses/export', key, { format: 'art', metadata: { run } });
    expect(exported.skipped).toEqual([]);
    expect(exported.trajectory_groups).toHaveLength(1);
    const [group] = exported.trajectory_groups;
    expect(group.trajectories.map((t) => [t.metadata['trajectory_id'], t.reward]).sort()).toEqual([['ai-sdk', 1], ['langchain', 0]]);
    for (const trajectory of group.trajectories) {
      // Each turn's answer is a Choice with the tokens served.
      expect(trajectory.messages_and_choices.map((item) => ('message' in item ? 'choice' : item['role']))).toEqual(['user', 'choice', 'user', 'choice']);
    }
    const theirs = await stack.json<ArtExport>('POST', '/v1/responses/export', otherKey, { format: 'art', metadata: { run } });
    expect(theirs.trajectory_groups).toEqual([]);

    const job = await stack.json<{ id: string }>('POST', '/v1/preview/training-jobs', key, { model_id: trainable.id, trajectory_groups: exported.trajectory_groups });
    expect(await waitForTrainingJob(stack, key, job.id)).toMatchObject({ status: 'succeeded', error_message: null, checkpoint_step: 1 });
  }, 300_000);

  it('a fine-tuning job from a JSONL file makes a model that both clients are served, over chat completions and Responses', async () => {
    const file = await client.files.create({ file: await toFile(Buffer.from(TRAIN), 'train.jsonl'), purpose: 'fine-tune' });
    const created = await client.fineTuning.jobs.create({ model, training_file: file.id, suffix: 'clients', method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 1, batch_size: 2 } } } });
    const job = await waitForFineTuningJob(client, created.id);
    expect(job.status).toBe('succeeded');
    const tuned = job.fine_tuned_model as string;

    const provider = createOpenAI({ baseURL, apiKey: key });
    for (const languageModel of [provider(tuned), provider.chat(tuned)]) {
      const result = await generateText({ model: languageModel, prompt: 'Capital of France?', maxOutputTokens: 4, maxRetries: 0 });
      expect(result.response.headers?.['x-trainyard-checkpoint-step']).toBe('1');
      expect(result.usage.outputTokens).toBeGreaterThan(0);
    }
    for (const useResponsesApi of [false, true]) {
      const answer = await new ChatOpenAI({ model: tuned, apiKey: key, configuration: { baseURL }, useResponsesApi, maxTokens: 4, maxRetries: 0 }).invoke('Capital of Italy?');
      expect(answer.usage_metadata?.output_tokens).toBeGreaterThan(0);
      expect(answer.response_metadata['model_name'] ?? answer.response_metadata['model']).toBe(tuned);
    }
    // Another entity is served nothing by that name.
    const theirs = await generateText({ model: createOpenAI({ baseURL, apiKey: otherKey })(tuned), prompt: 'Hi', maxOutputTokens: 2, maxRetries: 0 }).catch((e: unknown) => e);
    expect((theirs as APICallError).statusCode).toBe(404);
  }, 300_000);
});
