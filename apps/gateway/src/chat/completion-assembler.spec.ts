import type { StartCompletionReply, TokenInfo } from '@trainyard/contracts';
import { CompletionAssembler } from './completion-assembler';

const started: StartCompletionReply = { model: 'acme/p/m', base_model: 'base', checkpoint_step: 3, model_id: 'm1', logprobs: true };
const token = (id: number, text: string, logprob: number): TokenInfo => ({
  id,
  token: text,
  bytes: [...Buffer.from(text)],
  logprob,
  top_logprobs: [{ id, token: text, bytes: [...Buffer.from(text)], logprob }],
});

describe('CompletionAssembler', () => {
  it('builds the whole response from the events, with token ids when asked', () => {
    const assembler = new CompletionAssembler('chatcmpl-1', started, { n: 1, returnTokenIds: true });
    assembler.apply({ type: 'prompt', prompt_tokens: 5, prompt_token_ids: [1, 2, 3, 4, 5] });
    assembler.apply({ type: 'delta', index: 0, text: 'Hel', tokens: [token(10, 'Hel', -0.5)] });
    assembler.apply({ type: 'delta', index: 0, text: 'lo', tokens: [token(11, 'lo', -0.25)] });
    expect(assembler.done).toBe(false);
    assembler.apply({ type: 'finish', index: 0, finish_reason: 'stop', content: 'Hello', tool_calls: null, completion_token_ids: [10, 11] });
    assembler.apply({ type: 'done', usage: { prompt_tokens: 5, completion_tokens: 2 } });
    expect(assembler.done).toBe(true);

    const response = assembler.response() as Record<string, unknown> & { choices: Record<string, unknown>[] };
    expect(response).toMatchObject({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'acme/p/m',
      checkpoint_step: 3,
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      prompt_token_ids: [1, 2, 3, 4, 5],
    });
    expect(response.choices[0]).toMatchObject({
      index: 0,
      message: { role: 'assistant', content: 'Hello' },
      finish_reason: 'stop',
      token_ids: [10, 11],
      logprobs: { content: [{ token: 'Hel', logprob: -0.5, token_id: 10 }, { token: 'lo', logprob: -0.25, token_id: 11 }] },
    });
  });

  it("reports the worker's reused prompt tokens as usage.prompt_tokens_details.cached_tokens", () => {
    const assembler = new CompletionAssembler('chatcmpl-4', started, { n: 1, returnTokenIds: false });
    assembler.apply({ type: 'done', usage: { prompt_tokens: 5, completion_tokens: 2, cached_tokens: 4 } });
    expect(assembler.usageChunk()['usage']).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, prompt_tokens_details: { cached_tokens: 4 } });
    const older = new CompletionAssembler('chatcmpl-5', started, { n: 1, returnTokenIds: false });
    older.apply({ type: 'done', usage: { prompt_tokens: 5, completion_tokens: 2 } });
    expect(older.usageChunk()['usage']).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
  });

  it('streams a role chunk per choice, content deltas, and a finish chunk', () => {
    const assembler = new CompletionAssembler('chatcmpl-2', { ...started, logprobs: false }, { n: 2, returnTokenIds: false });
    const first = assembler.apply({ type: 'prompt', prompt_tokens: 1, prompt_token_ids: [] });
    expect(first.map((c) => (c as { choices: { index: number; delta: unknown }[] }).choices[0])).toEqual([
      { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
      { index: 1, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
    ]);
    const [delta] = assembler.apply({ type: 'delta', index: 1, text: 'x', tokens: [token(9, 'x', -1)] });
    expect((delta as { choices: unknown[] }).choices).toEqual([{ index: 1, delta: { content: 'x' }, logprobs: null, finish_reason: null }]);
    const [finish] = assembler.apply({ type: 'finish', index: 1, finish_reason: 'length', content: 'x', tool_calls: null, completion_token_ids: [9] });
    expect((finish as { choices: unknown[] }).choices).toEqual([{ index: 1, delta: {}, logprobs: null, finish_reason: 'length' }]);
    expect((assembler.response() as { choices: { logprobs: unknown }[] }).choices[0].logprobs).toBeNull();
  });

  it('streams tool calls as OpenAI does: id, type and name first, then argument pieces; logprobs for every token', () => {
    const assembler = new CompletionAssembler('chatcmpl-3', started, { n: 1, returnTokenIds: false });
    const choiceOf = (chunks: Record<string, unknown>[]) => (chunks[0] as { choices: { delta: unknown; logprobs: { content: unknown[] } | null }[] }).choices[0];
    // A token of markup alone: an empty delta that still carries the token's logprob.
    const markup = choiceOf(assembler.apply({ type: 'delta', index: 0, text: '', tokens: [token(3, '<tool_call>', -0.1)] }));
    expect(markup.delta).toEqual({});
    expect(markup.logprobs?.content).toHaveLength(1);
    const opened = choiceOf(assembler.apply({ type: 'delta', index: 0, text: '', tokens: [], tool_call: { index: 0, id: 'call_1', name: 'get_weather', arguments: '' } }));
    expect(opened.delta).toEqual({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] });
    const piece = choiceOf(assembler.apply({ type: 'delta', index: 0, text: '', tokens: [token(4, '{"city', -0.2)], tool_call: { index: 0, arguments: '{"city' } }));
    expect(piece.delta).toEqual({ tool_calls: [{ index: 0, function: { arguments: '{"city' } }] });
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } };
    const [finish] = assembler.apply({ type: 'finish', index: 0, finish_reason: 'tool_calls', content: null, tool_calls: [call], completion_token_ids: [3, 4] });
    // Already streamed: the last chunk only ends the choice.
    expect((finish as { choices: { delta: unknown; finish_reason: unknown }[] }).choices[0]).toMatchObject({ delta: {}, finish_reason: 'tool_calls' });
    assembler.apply({ type: 'done', usage: { prompt_tokens: 1, completion_tokens: 2 } });
    const choice = (assembler.response() as { choices: { message: unknown; logprobs: { content: unknown[] } }[] }).choices[0];
    expect(choice.message).toEqual({ role: 'assistant', content: null, tool_calls: [call] });
    expect(choice.logprobs.content).toHaveLength(2);
  });

  it("returns a reasoning model's reasoning as reasoning_content, streamed as reasoning_content deltas", () => {
    const assembler = new CompletionAssembler('chatcmpl-6', { ...started, logprobs: false }, { n: 1, returnTokenIds: false });
    assembler.apply({ type: 'prompt', prompt_tokens: 1, prompt_token_ids: [] });
    const [chunk] = assembler.apply({ type: 'delta', index: 0, text: '', tokens: [], reasoning: 'Think.' });
    expect((chunk as { choices: { delta: unknown }[] }).choices[0].delta).toEqual({ reasoning_content: 'Think.' });
    assembler.apply({ type: 'delta', index: 0, text: '{}', tokens: [] });
    assembler.apply({ type: 'finish', index: 0, finish_reason: 'stop', content: '{}', tool_calls: null, reasoning_content: 'Think.', completion_token_ids: [1, 2, 3] });
    assembler.apply({ type: 'done', usage: { prompt_tokens: 1, completion_tokens: 3 } });
    const message = (assembler.response() as { choices: { message: unknown }[] }).choices[0].message;
    expect(message).toEqual({ role: 'assistant', content: '{}', reasoning_content: 'Think.' });
    // A model that does not reason has no such field at all.
    const plain = new CompletionAssembler('chatcmpl-7', started, { n: 1, returnTokenIds: false });
    plain.apply({ type: 'finish', index: 0, finish_reason: 'stop', content: 'x', tool_calls: null, completion_token_ids: [1] });
    expect((plain.response() as { choices: { message: object }[] }).choices[0].message).not.toHaveProperty('reasoning_content');
  });
});
