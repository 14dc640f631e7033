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

  it('sends held-back text or tool calls with the finish when tools were offered', () => {
    const assembler = new CompletionAssembler('chatcmpl-3', started, { n: 1, returnTokenIds: false });
    assembler.withholdText();
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } };
    const [finish] = assembler.apply({ type: 'finish', index: 0, finish_reason: 'tool_calls', content: null, tool_calls: [call], completion_token_ids: [] });
    expect((finish as { choices: { delta: unknown }[] }).choices[0].delta).toEqual({ tool_calls: [{ index: 0, ...call }] });
    const message = (assembler.response() as { choices: { message: unknown }[] }).choices[0].message;
    expect(message).toEqual({ role: 'assistant', content: null, tool_calls: [call] });
  });
});
