import type { ChatMessageInput } from '@trainyard/contracts';

/**
 * The position of the first tool message whose tool_call_id answers no tool call of an earlier
 * assistant message, if any. The chat template would render it as a result of nothing, and
 * OpenAI refuses it too.
 */
export function unmatchedToolResult(messages: readonly ChatMessageInput[]): number | undefined {
  const calls = new Set<string>();
  for (const [index, message] of messages.entries()) {
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) calls.add(call.id);
    if (message.role === 'tool' && (message.tool_call_id === undefined || !calls.has(message.tool_call_id))) return index;
  }
  return undefined;
}
