import type { InferenceEvent, StartCompletionReply } from '@trainyard/contracts';
import { ResponseAssembler, ResponseEcho, ResponseStreamEvent } from './response-assembler';

const started: StartCompletionReply = { model: 'acme/p/m', base_model: 'base', checkpoint_step: 3, model_id: 'm1', logprobs: false };
const echo: ResponseEcho = {
  instructions: 'Be brief.',
  max_output_tokens: 16,
  temperature: 1,
  top_p: 1,
  text: { format: { type: 'text' } },
  tools: [],
  tool_choice: 'auto',
  parallel_tool_calls: true,
  user: null,
  store: true,
  previous_response_id: 'resp_0',
  conversation: null,
  metadata: { run: '7' },
  top_logprobs: null,
};
const prompt: InferenceEvent = { type: 'prompt', prompt_tokens: 5, prompt_token_ids: [1, 2, 3, 4, 5] };
const delta = (text: string, tool_call?: { index: number; id?: string; name?: string; arguments: string }): InferenceEvent => ({
  type: 'delta',
  index: 0,
  text,
  tokens: [],
  ...(tool_call ? { tool_call } : {}),
});
const finish = (finish_reason: 'stop' | 'length' | 'tool_calls', content: string | null, calls: [string, string, string][] = []): InferenceEvent => ({
  type: 'finish',
  index: 0,
  finish_reason,
  content,
  tool_calls: calls.length ? calls.map(([id, name, args]) => ({ id, type: 'function', function: { name, arguments: args } })) : null,
  completion_token_ids: [],
});
const done: InferenceEvent = { type: 'done', usage: { prompt_tokens: 5, completion_tokens: 2, cached_tokens: 4 } };

function run(events: InferenceEvent[], setup: (a: ResponseAssembler) => void = () => undefined, reply: StartCompletionReply = started) {
  const assembler = new ResponseAssembler('resp_1', reply, echo);
  setup(assembler);
  const stream = events.flatMap((event) => assembler.apply(event));
  return { assembler, stream, types: stream.map((e) => e.type) };
}

/** Replays the stream as a client accumulates it: the output items as the item events leave them. */
function replay(stream: ResponseStreamEvent[]) {
  const output: Record<string, unknown>[] = [];
  for (const e of stream) {
    const at = e['output_index'] as number;
    if (e.type === 'response.output_item.added' || e.type === 'response.output_item.done') output[at] = e['item'] as Record<string, unknown>;
    if (e.type === 'response.output_text.delta') {
      const part = (output[at]['content'] as { text: string }[])[0] ?? ((output[at]['content'] as unknown[])[0] = { text: '' });
      (part as { text: string }).text += e['delta'] as string;
    }
    if (e.type === 'response.function_call_arguments.delta') output[at]['arguments'] = `${output[at]['arguments']}${e['delta']}`;
  }
  return output;
}

describe('ResponseAssembler', () => {
  it('streams the documented event sequence for text, numbered from 0, and ends completed', () => {
    const { stream, types } = run([prompt, delta('Hel'), delta('lo'), finish('stop', 'Hello'), done]);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(stream.map((e) => e.sequence_number)).toEqual(stream.map((_, i) => i));
    expect(stream[0]['response']).toMatchObject({ id: 'resp_1', status: 'in_progress', output: [], usage: null, checkpoint_step: 3 });
    const itemId = (stream[2]['item'] as { id: string }).id;
    expect(itemId).toMatch(/^msg_/);
    expect(stream.slice(3, 9).every((e) => e['item_id'] === itemId || (e['item'] as { id: string }).id === itemId)).toBe(true);
    expect(stream[6]).toMatchObject({ text: 'Hello', output_index: 0, content_index: 0 });
    expect(stream[9]['response']).toMatchObject({
      status: 'completed',
      incomplete_details: null,
      output: [{ id: itemId, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] }],
      usage: { input_tokens: 5, input_tokens_details: { cached_tokens: 4 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 7 },
    });
    expect(replay(stream)).toEqual((stream[9]['response'] as { output: unknown[] }).output);
  });

  it('gives the whole response object, echoing the request, the same as the stream ends with', () => {
    const { assembler, stream } = run([prompt, delta('Hi'), finish('stop', 'Hi'), done]);
    const response = assembler.response();
    expect(response).toEqual(stream.at(-1)?.['response']);
    expect(response).toMatchObject({
      object: 'response',
      model: 'acme/p/m',
      instructions: 'Be brief.',
      max_output_tokens: 16,
      store: true,
      previous_response_id: 'resp_0',
      conversation: null,
      metadata: { run: '7' },
      error: null,
      tools: [],
      tool_choice: 'auto',
      text: { format: { type: 'text' } },
    });
  });

  it('ends a response cut by max_output_tokens as incomplete, saying why', () => {
    const { stream, types } = run([prompt, delta('Hel'), finish('length', 'Hel'), done]);
    expect(types.at(-1)).toBe('response.incomplete');
    expect(stream.at(-1)?.['response']).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      output: [{ type: 'message', status: 'incomplete', content: [{ text: 'Hel' }] }],
    });
  });

  it('always has a message when there are no calls, even an empty one', () => {
    const { assembler } = run([prompt, finish('stop', ''), done]);
    expect(assembler.response()['output']).toMatchObject([{ type: 'message', content: [{ type: 'output_text', text: '' }] }]);
  });

  it('turns the finish event\'s tool calls into function_call items with their argument events', () => {
    const { stream, types, assembler } = run(
      [prompt, finish('tool_calls', null, [['call_a', 'get_weather', '{"city":"Oslo"}'], ['call_b', 'get_time', '{}']]), done],
    );
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(stream[2]['item']).toMatchObject({ type: 'function_call', call_id: 'call_a', name: 'get_weather', arguments: '', status: 'in_progress' });
    expect(stream[4]).toMatchObject({ output_index: 0, name: 'get_weather', arguments: '{"city":"Oslo"}' });
    const output = assembler.response()['output'] as Record<string, unknown>[];
    expect(output).toMatchObject([
      { type: 'function_call', call_id: 'call_a', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' },
      { type: 'function_call', call_id: 'call_b', name: 'get_time', arguments: '{}', status: 'completed' },
    ]);
    expect(output.map((item) => item['id'])).toEqual([expect.stringMatching(/^fc_/), expect.stringMatching(/^fc_/)]);
    expect(assembler.response()['status']).toBe('completed');
    expect(replay(stream)).toEqual(output);
  });

  it('streams a call\'s arguments from the worker\'s tool-call fragments, after the text before it', () => {
    const { stream, types, assembler } = run([
      prompt,
      delta('Let me check.'),
      delta('', { index: 0, id: 'call_a', name: 'get_weather', arguments: '' }),
      delta('', { index: 0, arguments: '{"city":' }),
      delta('', { index: 0, arguments: '"Oslo"}' }),
      finish('tool_calls', 'Let me check.', [['call_a', 'get_weather', '{"city":"Oslo"}']]),
      done,
    ]);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(stream.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e['delta'])).toEqual(['{"city":', '"Oslo"}']);
    const output = assembler.response()['output'];
    expect(output).toMatchObject([
      { type: 'message', content: [{ text: 'Let me check.' }] },
      { type: 'function_call', call_id: 'call_a', arguments: '{"city":"Oslo"}' },
    ]);
    expect(replay(stream)).toEqual(output);
  });

  it('carries the text tokens\' logprobs on the output_text part and its events when the worker reports them; a call\'s tokens on none', () => {
    const token = (t: string, logprob: number) => ({ id: 1, token: t, bytes: [...Buffer.from(t)], logprob, top_logprobs: [{ id: 2, token: 'x', bytes: [120], logprob: -3 }] });
    const withTokens = (text: string, tokens: ReturnType<typeof token>[], tool_call?: { index: number; id?: string; name?: string; arguments: string }): InferenceEvent => ({
      type: 'delta',
      index: 0,
      text,
      tokens,
      ...(tool_call ? { tool_call } : {}),
    });
    const events = [
      prompt,
      withTokens('Hel', [token('Hel', -0.5)]),
      withTokens('lo', [token('lo', -0.25)]),
      // A token whose bytes are not a whole character yet: no text, but its logprob goes with the text.
      withTokens('', [token('\ufffd', -2)]),
      withTokens('', [token('<tool_call>', -0.1)], { index: 0, id: 'call_a', name: 'f', arguments: '{}' }),
      finish('tool_calls', 'Hello', [['call_a', 'f', '{}']]),
      done,
    ];
    const { stream, assembler } = run(events, undefined, { ...started, logprobs: true });
    const expected = [
      { token: 'Hel', logprob: -0.5, bytes: [72, 101, 108], top_logprobs: [{ token: 'x', logprob: -3, bytes: [120] }] },
      { token: 'lo', logprob: -0.25, bytes: [108, 111], top_logprobs: [{ token: 'x', logprob: -3, bytes: [120] }] },
      { token: '\ufffd', logprob: -2, bytes: [239, 191, 189], top_logprobs: [{ token: 'x', logprob: -3, bytes: [120] }] },
    ];
    expect(assembler.response()['output']).toMatchObject([{ type: 'message', content: [{ text: 'Hello', logprobs: expected }] }, { type: 'function_call' }]);
    const textEvents = stream.filter((e) => e.type === 'response.output_text.delta');
    expect(textEvents.map((e) => e['logprobs'])).toEqual([
      [{ token: 'Hel', logprob: -0.5, top_logprobs: [{ token: 'x', logprob: -3 }] }],
      [{ token: 'lo', logprob: -0.25, top_logprobs: [{ token: 'x', logprob: -3 }] }],
      [{ token: '\ufffd', logprob: -2, top_logprobs: [{ token: 'x', logprob: -3 }] }],
    ]);
    expect(textEvents.map((e) => e['delta'])).toEqual(['Hel', 'lo', '']);
    expect(stream.find((e) => e.type === 'response.output_text.done')?.['logprobs']).toHaveLength(3);
    expect(replay(stream)[0]).toMatchObject({ content: [{ text: 'Hello' }] });
    // Not asked for: the parts keep OpenAI's empty list.
    const plain = run(events).assembler.response()['output'] as { content?: { logprobs: unknown[] }[] }[];
    expect(plain[0].content?.[0].logprobs).toEqual([]);
  });

  it('has no stream events for accepted, and an error event numbered in sequence', () => {
    const assembler = new ResponseAssembler('resp_2', started, echo);
    expect(assembler.apply({ type: 'accepted' })).toEqual([]);
    assembler.apply(prompt);
    expect(assembler.errorEvent({ message: 'gone', code: 'unavailable', param: null })).toEqual({
      type: 'error',
      sequence_number: 2,
      code: 'unavailable',
      message: 'gone',
      param: null,
    });
  });

  it("puts a reasoning model's reasoning in a reasoning item before the message, streamed as reasoning_text events", () => {
    const think = (reasoning: string): InferenceEvent => ({ type: 'delta', index: 0, text: '', tokens: [], reasoning });
    const end: InferenceEvent = { ...(finish('stop', 'Hi') as InferenceEvent & { type: 'finish' }), reasoning_content: 'Greet back.' };
    const { assembler, stream, types } = run([prompt, think('Greet'), think(' back.'), delta('Hi'), end, done]);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const output = (assembler.response()['output'] as Record<string, unknown>[]).map((item) => item['type']);
    expect(output).toEqual(['reasoning', 'message']);
    expect(assembler.response()['output']).toMatchObject([{ type: 'reasoning', status: 'completed', content: [{ type: 'reasoning_text', text: 'Greet back.' }] }, { type: 'message', content: [{ text: 'Hi' }] }]);
    expect(stream.find((e) => e.type === 'response.reasoning_text.done')).toMatchObject({ output_index: 0, text: 'Greet back.' });
  });
});
