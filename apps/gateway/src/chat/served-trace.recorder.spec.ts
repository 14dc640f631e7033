import type { InferenceEvent, StartCompletionReply, TokenInfo } from '@trainyard/contracts';
import { recorded, ServedTraceRecorder } from './served-trace.recorder';

const started: StartCompletionReply = { model: 'acme/p/m', base_model: 'base', checkpoint_step: 3, model_id: 'm1', logprobs: false };
const token = (id: number, text: string, logprob: number): TokenInfo => ({ id, token: text, bytes: [...Buffer.from(text)], logprob, top_logprobs: [] });
const params = { messages: [{ role: 'user' as const, content: 'hi' }], tools: null };

describe('ServedTraceRecorder', () => {
  it('keeps the prompt ids and each choice with its sampled ids and logprobs, though the answer shows none', () => {
    const recorder = new ServedTraceRecorder(started, params);
    const events: InferenceEvent[] = [
      { type: 'prompt', prompt_tokens: 3, prompt_token_ids: [1, 2, 3] },
      { type: 'delta', index: 1, text: 'B', tokens: [token(21, 'B', -1)] },
      { type: 'delta', index: 0, text: 'He', tokens: [token(10, 'He', -0.5)] },
      { type: 'delta', index: 0, text: 'y', tokens: [token(11, 'y', -0.25)] },
      { type: 'finish', index: 0, finish_reason: 'stop', content: 'Hey', tool_calls: null, completion_token_ids: [10, 11] },
      { type: 'finish', index: 1, finish_reason: 'length', content: 'B', tool_calls: null, completion_token_ids: [21] },
      { type: 'done', usage: { prompt_tokens: 3, completion_tokens: 3 } },
    ];
    events.forEach((event) => recorder.observe(event));
    expect(recorder.trace()).toEqual({
      base_model: 'base',
      model_id: 'm1',
      checkpoint_step: 3,
      messages: params.messages,
      tools: null,
      prompt_token_ids: [1, 2, 3],
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hey' },
          finish_reason: 'stop',
          token_ids: [10, 11],
          logprobs: [
            { token_id: 10, token: 'He', logprob: -0.5 },
            { token_id: 11, token: 'y', logprob: -0.25 },
          ],
        },
        { index: 1, message: { role: 'assistant', content: 'B' }, finish_reason: 'length', token_ids: [21], logprobs: [{ token_id: 21, token: 'B', logprob: -1 }] },
      ],
    });
  });

  it('keeps a tool call as the message, content null, and no logprobs that do not line up with the ids', () => {
    const recorder = new ServedTraceRecorder(started, params);
    recorder.observe({ type: 'delta', index: 0, text: '', tokens: [token(5, '{', -0.1)] });
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    recorder.observe({ type: 'finish', index: 0, finish_reason: 'tool_calls', content: null, tool_calls: [call], completion_token_ids: [5, 6] });
    expect(recorder.trace().choices[0]).toEqual({ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls', token_ids: [5, 6], logprobs: null });
  });

  it('passes every event on unchanged while it records', async () => {
    const recorder = new ServedTraceRecorder(started, params);
    async function* source(): AsyncGenerator<InferenceEvent> {
      yield { type: 'prompt', prompt_tokens: 1, prompt_token_ids: [7] };
      yield { type: 'done', usage: { prompt_tokens: 1, completion_tokens: 0 } };
    }
    const seen: InferenceEvent[] = [];
    for await (const event of recorded(source(), recorder)) seen.push(event);
    expect(seen.map((e) => e.type)).toEqual(['prompt', 'done']);
    expect(recorder.trace().prompt_token_ids).toEqual([7]);
  });
});
