import { ChatCompletionParams, ChatMessageInput, FunctionTool, ResponseFormat, ServiceError, ToolCallOutput, ToolChoice } from '@trainyard/contracts';
import { parametersProblem } from '../chat/dto/chat-content.validators';
import { checkToolChoice } from '../chat/tool-choice';
import type { CreateResponseRequest } from './dto/create-response.request';

export interface ResponseLimits {
  defaultMaxTokens: number;
  maxCompletionTokens: number;
}

type Item = Record<string, unknown>;

const MESSAGE_ROLES = ['user', 'system', 'developer', 'assistant'] as const;
type MessageRole = (typeof MESSAGE_ROLES)[number];

/**
 * A Responses request as the chat start request the chat completions path sends: instructions
 * and input items become chat messages (function calls join the assistant message before
 * them, their outputs become tool messages), `text.format` the response_format, and the flat
 * function tools the chat form. What cannot be served statelessly, or is not a function or a
 * text, is a 400 naming where it is.
 */
export function toChatParams(body: CreateResponseRequest, limits: ResponseLimits): ChatCompletionParams {
  if (body.previous_response_id != null) {
    throw ServiceError.invalid('previous_response_id is not supported: responses are not stored; send the conversation as input items', 'previous_response_id');
  }
  if (body.conversation != null) {
    throw ServiceError.invalid('conversation is not supported: responses are not stored; send the conversation as input items', 'conversation');
  }
  // A default past the deployment's limit is the limit: only what the client asked for is refused.
  const maxTokens = body.max_output_tokens ?? Math.min(limits.defaultMaxTokens, limits.maxCompletionTokens);
  if (maxTokens > limits.maxCompletionTokens) {
    throw ServiceError.invalid(`max_output_tokens is ${maxTokens}; this deployment allows at most ${limits.maxCompletionTokens}`, 'max_output_tokens');
  }
  const messages = toMessages(body);
  const tools = (body.tools ?? []).map(toChatTool);
  const choice = body.tool_choice ?? (tools.length > 0 ? 'auto' : 'none');
  checkToolChoice(
    tools.map((tool) => tool.function.name),
    typeof choice === 'object' ? { name: choice.name } : choice,
    (i) => `tools[${i}].name`,
  );
  const toolChoice: ToolChoice = typeof choice === 'object' ? { type: 'function', function: { name: choice.name } } : choice;
  return {
    model: body.model,
    messages,
    temperature: body.temperature ?? 1,
    top_p: body.top_p ?? 1,
    max_tokens: maxTokens,
    n: 1,
    stop: [],
    seed: null,
    logprobs: false,
    top_logprobs: 0,
    response_format: toResponseFormat(body),
    tools: tools.length > 0 ? tools : null,
    tool_choice: toolChoice,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    return_token_ids: false,
    chat_template_kwargs: templateKwargs(body),
  };
}

/** chat_template_kwargs, with reasoning.effort "none" as enable_thinking: false unless the kwargs say otherwise. */
function templateKwargs(body: CreateResponseRequest): Record<string, unknown> | null {
  const kwargs = body.chat_template_kwargs ?? null;
  if (body.reasoning?.effort !== 'none' || kwargs?.['enable_thinking'] !== undefined) return kwargs;
  return { ...kwargs, enable_thinking: false };
}

function toMessages(body: CreateResponseRequest): ChatMessageInput[] {
  const messages: ChatMessageInput[] = body.instructions ? [{ role: 'system', content: body.instructions }] : [];
  if (typeof body.input === 'string') return [...messages, { role: 'user', content: body.input }];
  const calls = new Set<string>();
  // A reasoning item goes with the assistant turn after it, whose template may render it.
  let reasoning: string | null = null;
  for (const [index, item] of body.input.entries()) {
    const at = `input[${index}]`;
    const type = item['type'] ?? 'message';
    if (type === 'message') {
      const message = toMessage(item, at);
      if (message.role === 'assistant' && reasoning !== null) message.reasoning_content = reasoning;
      if (message.role === 'assistant') reasoning = null;
      messages.push(message);
    } else if (type === 'function_call') {
      const call = toCall(item, at);
      calls.add(call.id);
      addCall(messages, call, reasoning);
      reasoning = null;
    } else if (type === 'reasoning') reasoning = reasoningText(item, at);
    else if (type === 'function_call_output') {
      const callId = text(item, 'call_id', at);
      if (!calls.has(callId)) throw ServiceError.invalid(`call_id ${JSON.stringify(callId.slice(0, 100))} answers no earlier function_call item`, `${at}.call_id`);
      messages.push({ role: 'tool', tool_call_id: callId, content: outputText(item, at) });
    } else if (type === 'item_reference') throw ServiceError.invalid('item_reference is not supported: responses are not stored; send the items themselves', `${at}.type`);
    else throw ServiceError.invalid(`input items of type ${JSON.stringify(type)} are not supported (message, reasoning, function_call and function_call_output are)`, `${at}.type`);
  }
  return messages;
}

function toMessage(item: Item, at: string): ChatMessageInput {
  const role = item['role'];
  if (!MESSAGE_ROLES.includes(role as MessageRole)) throw ServiceError.invalid(`role must be one of ${MESSAGE_ROLES.join(', ')}`, `${at}.role`);
  const content = item['content'];
  if (typeof content === 'string') return { role: role as MessageRole, content };
  if (!Array.isArray(content)) throw ServiceError.invalid('content must be a string or an array of text parts', `${at}.content`);
  const parts = content.map((part: unknown, i) => {
    const { type, text } = (part ?? {}) as { type?: unknown; text?: unknown };
    if ((type === 'input_text' || type === 'output_text') && typeof text === 'string') return text;
    throw ServiceError.invalid('only text content parts (input_text, output_text) are supported', `${at}.content[${i}]`);
  });
  return { role: role as MessageRole, content: parts.join('') };
}

function toCall(item: Item, at: string): ToolCallOutput {
  return { id: text(item, 'call_id', at), type: 'function', function: { name: text(item, 'name', at), arguments: text(item, 'arguments', at) } };
}

/** A function call joins the assistant message right before it, or starts one (with the reasoning before it). */
function addCall(messages: ChatMessageInput[], call: ToolCallOutput, reasoning: string | null): void {
  const last = messages.at(-1);
  if (last?.role === 'assistant' && reasoning === null) last.tool_calls = [...(last.tool_calls ?? []), call];
  else messages.push({ role: 'assistant', content: null, tool_calls: [call], ...(reasoning === null ? {} : { reasoning_content: reasoning }) });
}

/** A reasoning item's text: its reasoning_text content, else its summary's text. */
function reasoningText(item: Item, at: string): string {
  const parts = Array.isArray(item['content']) && item['content'].length > 0 ? item['content'] : item['summary'];
  if (parts === undefined || parts === null) return '';
  if (!Array.isArray(parts) || !parts.every((part) => typeof part?.text === 'string')) {
    throw ServiceError.invalid('a reasoning item\'s content and summary must be arrays of parts with text', `${at}.content`);
  }
  return parts.map((part: { text: string }) => part.text).join('\n');
}

function outputText(item: Item, at: string): string {
  const output = item['output'];
  if (typeof output === 'string') return output;
  if (Array.isArray(output) && output.every((part) => part?.type === 'input_text' && typeof part.text === 'string')) {
    return output.map((part: { text: string }) => part.text).join('');
  }
  throw ServiceError.invalid('output must be a string or an array of input_text parts', `${at}.output`);
}

function text(item: Item, field: string, at: string): string {
  const value = item[field];
  if (typeof value !== 'string') throw ServiceError.invalid(`${field} must be a string`, `${at}.${field}`);
  return value;
}

function toChatTool(tool: Item, index: number): FunctionTool {
  const at = `tools[${index}]`;
  if (tool['type'] !== 'function') {
    throw ServiceError.invalid(`tools of type ${JSON.stringify(tool['type'])} are not supported (function tools are)`, `${at}.type`);
  }
  const name = text(tool, 'name', at);
  const { parameters, strict, description } = tool;
  const problem = parameters == null ? null : parametersProblem(parameters);
  if (problem) throw ServiceError.invalid(problem, `${at}.parameters`);
  return {
    type: 'function',
    function: {
      name,
      ...(typeof description === 'string' ? { description } : {}),
      ...(parameters != null ? { parameters: parameters as Record<string, unknown> } : {}),
      ...(typeof strict === 'boolean' ? { strict } : {}),
    },
  };
}

function toResponseFormat(body: CreateResponseRequest): ResponseFormat {
  const format = body.text?.format;
  if (format?.type === 'json_schema') {
    return { type: 'json_schema', json_schema: { name: format.name as string, schema: format.schema, strict: format.strict ?? null } };
  }
  return { type: format?.type === 'json_object' ? 'json_object' : 'text' };
}
