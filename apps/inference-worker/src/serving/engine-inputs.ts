import type { ChatCompletionParams, ResponseFormat } from '@trainyard/contracts';
import type { GrammarSpec, ToolCallRequest, ToolCallSyntax } from '@trainyard/engine';

/**
 * The engine's grammar for an OpenAI response_format: none for text, any object for json_object
 * (and a json_schema without a schema), the schema for json_schema. Schemas compile in strict
 * mode whatever the request's `strict` says: the output is valid under the schema either way,
 * and properties it does not name are never generated.
 */
export function grammarSpec(format: ResponseFormat): GrammarSpec | null {
  switch (format.type) {
    case 'text':
      return null;
    case 'json_object':
      return { kind: 'any_object' };
    case 'json_schema':
      return format.json_schema.schema === undefined ? { kind: 'any_object' } : { kind: 'schema', schema: format.json_schema.schema, strict: true };
  }
}

/** The engine's tool-call grammar request for a completion whose reply may hold calls (tool_choice not "none"). */
export function toolCallRequest(params: ChatCompletionParams, syntax: ToolCallSyntax): ToolCallRequest {
  const { tools, tool_choice, parallel_tool_calls } = params;
  return {
    syntax,
    tools: (tools ?? []).map((tool) => ({ name: tool.function.name, parameters: tool.function.parameters })),
    choice: typeof tool_choice === 'object' ? { name: tool_choice.function.name } : tool_choice === 'required' ? 'required' : 'auto',
    parallel: parallel_tool_calls,
  };
}
