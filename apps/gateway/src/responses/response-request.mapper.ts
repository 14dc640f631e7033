import { ChatCompletionParams, FunctionTool, ResponseFormat, ServiceError, ToolChoice } from '@trainyard/contracts';
import { parametersProblem } from '../chat/dto/chat-content.validators';
import { checkToolChoice } from '../chat/tool-choice';
import type { CreateResponseRequest } from './dto/create-response.request';
import { PlacedItem, toChatMessages } from './response-items';

export interface ResponseLimits {
  defaultMaxTokens: number;
  maxCompletionTokens: number;
}

type Item = Record<string, unknown>;

/** What `include` may ask for: the one output this service has (logprobs of output text). */
export const OUTPUT_TEXT_LOGPROBS = 'message.output_text.logprobs';

/**
 * A Responses request as the chat start request the chat completions path sends: instructions
 * and the input items (the earlier turns first, references already resolved) become chat
 * messages, `text.format` the response_format, the flat function tools the chat form, and
 * `include: ["message.output_text.logprobs"]` with `top_logprobs` chat's logprobs. What is not
 * a function or a text is a 400 naming where it is.
 */
export function toChatParams(body: CreateResponseRequest, items: PlacedItem[], limits: ResponseLimits): ChatCompletionParams {
  // A default past the deployment's limit is the limit: only what the client asked for is refused.
  const maxTokens = body.max_output_tokens ?? Math.min(limits.defaultMaxTokens, limits.maxCompletionTokens);
  if (maxTokens > limits.maxCompletionTokens) {
    throw ServiceError.invalid(`max_output_tokens is ${maxTokens}; this deployment allows at most ${limits.maxCompletionTokens}`, 'max_output_tokens');
  }
  const logprobs = wantsLogprobs(body);
  if (body.top_logprobs && !logprobs) throw ServiceError.invalid(`top_logprobs requires include: ["${OUTPUT_TEXT_LOGPROBS}"]`, 'top_logprobs');
  const messages = [...(body.instructions ? [{ role: 'system' as const, content: body.instructions }] : []), ...toChatMessages(items)];
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
    logprobs,
    top_logprobs: logprobs ? (body.top_logprobs ?? 0) : 0,
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

/** Whether the output text carries logprobs: `include` names them. */
export function wantsLogprobs(body: CreateResponseRequest): boolean {
  return body.include?.includes(OUTPUT_TEXT_LOGPROBS) ?? false;
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
