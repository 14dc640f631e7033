import type { ChatMessageInput } from '@trainyard/contracts';
import { unmatchedToolResult } from './tool-results';

const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'f', arguments: '{}' } });

describe('unmatchedToolResult', () => {
  const asked: ChatMessageInput[] = [
    { role: 'user', content: 'weather?' },
    { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
  ];

  it('accepts results of earlier tool calls, in any order', () => {
    expect(
      unmatchedToolResult([...asked, { role: 'tool', tool_call_id: 'b', content: '1' }, { role: 'tool', tool_call_id: 'a', content: '2' }]),
    ).toBeUndefined();
  });

  it('finds a result whose id matches no earlier call, or that has no id', () => {
    expect(unmatchedToolResult([...asked, { role: 'tool', tool_call_id: 'c', content: '1' }])).toBe(2);
    expect(unmatchedToolResult([...asked, { role: 'tool', content: '1' }])).toBe(2);
  });

  it('does not count a call made after the result', () => {
    expect(unmatchedToolResult([{ role: 'tool', tool_call_id: 'a', content: '1' }, ...asked])).toBe(0);
  });
});
