import { ChatMessageInput, isStateId, ResponseItem, ServiceError, ToolCallOutput } from '@trainyard/contracts';
import { randomBytes } from 'node:crypto';

type Item = Record<string, unknown>;

const MESSAGE_ROLES = ['user', 'system', 'developer', 'assistant'] as const;
type MessageRole = (typeof MESSAGE_ROLES)[number];

/** Ids in OpenAI's style: a prefix and random hex. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('hex')}`;
}

/** An input item as the request gave it: an item in OpenAI's stored shape, or a reference to a stored one. */
export type InputEntry = { item: ResponseItem; at: string } | { reference: string; at: string };

/** An item with the request field it came from (`input[2]`, or the stored turns it was read from), for errors that name it. */
export interface PlacedItem {
  item: ResponseItem;
  at: string;
}

/**
 * The `input` of a response (or the `items` of a conversation) as items in the shape OpenAI
 * stores and lists them: each with an `id` (the client's, or a new one), messages with their
 * text parts, reasoning with its text parts, calls and their outputs `completed`. `item_reference` items stay references,
 * resolved against the stored ones before the response runs. Anything else is a 400 naming
 * the item (`${field}[i]`).
 */
export function toInputEntries(input: string | Item[], field = 'input'): InputEntry[] {
  if (typeof input === 'string') return [{ item: message('user', [{ type: 'input_text', text: input }]), at: field }];
  return input.map((raw, index): InputEntry => {
    const at = `${field}[${index}]`;
    const type = raw['type'] ?? 'message';
    if (type === 'item_reference') return { reference: text(raw, 'id', at), at };
    return { item: toItem(raw, type, at), at };
  });
}

function toItem(raw: Item, type: unknown, at: string): ResponseItem {
  // A client's id is kept when it can be stored and looked up (see isStateId); otherwise the item gets a new one.
  const id = typeof raw['id'] === 'string' && isStateId(raw['id']) ? raw['id'] : undefined;
  if (type === 'message') {
    const role = raw['role'];
    if (!MESSAGE_ROLES.includes(role as MessageRole)) throw ServiceError.invalid(`role must be one of ${MESSAGE_ROLES.join(', ')}`, `${at}.role`);
    return message(role as MessageRole, contentParts(raw['content'], role === 'assistant', at), id);
  }
  if (type === 'function_call') {
    return {
      id: id ?? newId('fc'),
      type: 'function_call',
      call_id: text(raw, 'call_id', at),
      name: text(raw, 'name', at),
      arguments: text(raw, 'arguments', at),
      status: 'completed',
    };
  }
  if (type === 'function_call_output') {
    return { id: id ?? newId('fco'), type: 'function_call_output', call_id: text(raw, 'call_id', at), output: callOutput(raw, at), status: 'completed' };
  }
  if (type === 'reasoning') {
    return { id: id ?? newId('rs'), type: 'reasoning', summary: textParts(raw['summary'], at), content: textParts(raw['content'], at), status: 'completed' };
  }
  throw ServiceError.invalid(
    `input items of type ${JSON.stringify(type)} are not supported (message, reasoning, function_call, function_call_output and item_reference are)`,
    `${at}.type`,
  );
}

function message(role: MessageRole, content: Item[], id?: string): ResponseItem {
  return { id: id ?? newId('msg'), type: 'message', role, content, status: 'completed' };
}

/** A message's content as text parts: a string becomes one part, input_text for the caller's roles and output_text for the assistant. */
function contentParts(content: unknown, assistant: boolean, at: string): Item[] {
  const part = (type: unknown, text: string): Item => (type === 'output_text' ? { type, text, annotations: [] } : { type: 'input_text', text });
  if (typeof content === 'string') return [part(assistant ? 'output_text' : 'input_text', content)];
  if (!Array.isArray(content)) throw ServiceError.invalid('content must be a string or an array of text parts', `${at}.content`);
  return content.map((value: unknown, i) => {
    const { type, text } = (value ?? {}) as { type?: unknown; text?: unknown };
    if ((type === 'input_text' || type === 'output_text') && typeof text === 'string') return part(type, text);
    throw ServiceError.invalid('only text content parts (input_text, output_text) are supported', `${at}.content[${i}]`);
  });
}

/** A reasoning item's summary or content: parts with text, kept as `{type, text}`; absent is none. */
function textParts(parts: unknown, at: string): Item[] {
  if (parts === undefined || parts === null) return [];
  if (!Array.isArray(parts) || !parts.every((part) => typeof part?.text === 'string')) {
    throw ServiceError.invalid('a reasoning item\'s content and summary must be arrays of parts with text', `${at}.content`);
  }
  return parts.map((part: { type?: unknown; text: string }) => ({ type: typeof part.type === 'string' ? part.type : 'reasoning_text', text: part.text }));
}

function callOutput(item: Item, at: string): string | Item[] {
  const output = item['output'];
  if (typeof output === 'string') return output;
  if (Array.isArray(output) && output.every((part) => part?.type === 'input_text' && typeof part.text === 'string')) {
    return output.map((part: { text: string }) => ({ type: 'input_text', text: part.text }));
  }
  throw ServiceError.invalid('output must be a string or an array of input_text parts', `${at}.output`);
}

function text(item: Item, field: string, at: string): string {
  const value = item[field];
  if (typeof value !== 'string') throw ServiceError.invalid(`${field} must be a string`, `${at}.${field}`);
  return value;
}

/**
 * Items as the chat conversation the model reads: messages with their text joined, a reasoning
 * item's text on the assistant turn after it (whose template may render it), function calls
 * joining the assistant message right before them (or starting one, with the reasoning before
 * it), their outputs as tool messages. An output must answer a call made before it.
 */
export function toChatMessages(items: PlacedItem[]): ChatMessageInput[] {
  const messages: ChatMessageInput[] = [];
  const calls = new Set<string>();
  let reasoning: string | null = null;
  for (const { item, at } of items) {
    if (item.type === 'message') {
      const parts = item['content'] as { text: string }[];
      const message: ChatMessageInput = { role: item['role'] as MessageRole, content: parts.map((part) => part.text).join('') };
      if (message.role === 'assistant' && reasoning !== null) message.reasoning_content = reasoning;
      if (message.role === 'assistant') reasoning = null;
      messages.push(message);
    } else if (item.type === 'reasoning') {
      reasoning = reasoningText(item);
    } else if (item.type === 'function_call') {
      const call: ToolCallOutput = { id: item['call_id'] as string, type: 'function', function: { name: item['name'] as string, arguments: item['arguments'] as string } };
      calls.add(call.id);
      const last = messages.at(-1);
      if (last?.role === 'assistant' && reasoning === null) last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: 'assistant', content: null, tool_calls: [call], ...(reasoning === null ? {} : { reasoning_content: reasoning }) });
      reasoning = null;
    } else if (item.type === 'function_call_output') {
      const callId = item['call_id'] as string;
      if (!calls.has(callId)) throw ServiceError.invalid(`call_id ${JSON.stringify(callId.slice(0, 100))} answers no earlier function_call item`, `${at}.call_id`);
      const output = item['output'] as string | { text: string }[];
      messages.push({ role: 'tool', tool_call_id: callId, content: typeof output === 'string' ? output : output.map((part) => part.text).join('') });
    }
  }
  return messages;
}

/** A reasoning item's text: its content (the model's own reasoning), else its summary. */
function reasoningText(item: ResponseItem): string {
  const content = item['content'] as { text: string }[] | undefined;
  const parts = content && content.length > 0 ? content : ((item['summary'] as { text: string }[] | undefined) ?? []);
  return parts.map((part) => part.text).join('\n');
}
