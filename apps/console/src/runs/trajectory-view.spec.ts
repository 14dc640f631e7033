import { metricsOf, turnsOf } from './trajectory-view';

describe('a trajectory as turns', () => {
  it('reads messages, a Choice with its tool call and logprobs, and the tool result', () => {
    const turns = turnsOf({
      messages_and_choices: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in ' }, { type: 'text', text: 'Oslo?' }] },
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
          logprobs: { content: [{ token: '{', logprob: -0.1 }, { token: 'x', logprob: 'bad' }] },
        },
        { role: 'tool', tool_call_id: 'c1', content: 'rain' },
        'not a message',
      ],
    });
    expect(turns.map((t) => [t.role, t.text, t.choice])).toEqual([
      ['user', 'Weather in Oslo?', false],
      ['assistant', '', true],
      ['tool', 'rain', false],
    ]);
    expect(turns[1].toolCalls).toEqual([{ id: 'c1', name: 'weather', arguments: '{"city":"Oslo"}' }]);
    expect(turns[1].logprobs).toEqual([{ token: '{', logprob: -0.1 }]);
    expect(turns[1].finishReason).toBe('tool_calls');
    expect(turns[2].toolCallId).toBe('c1');
  });

  it('keeps numeric and boolean metrics only', () => {
    expect(metricsOf({ metrics: { turns: 3, solved: true, note: 'x' } })).toEqual({ turns: 3, solved: 1 });
    expect(metricsOf({})).toEqual({});
  });
});
