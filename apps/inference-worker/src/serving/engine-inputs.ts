import type { ChatCompletionParams, ResponseFormat } from '@trainyard/contracts';
import type { GrammarBudgetError, GrammarError, GrammarKind, GrammarSpec, ToolCallRequest, ToolCallSyntax } from '@trainyard/engine';

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
    calls: typeof tool_choice === 'object' ? { only: tool_choice.function.name } : tool_choice === 'required' ? 'required' : 'optional',
    parallel: parallel_tool_calls,
  };
}

/** What the request calls the grammar a budget problem is about. */
const GRAMMAR_FIELD: Record<GrammarKind, string> = { json: 'response_format', tool_calls: 'tool_choice' };

/** A GrammarError in the request's own terms: the message names the field at fault, `param` is that field. */
export function grammarRefusal(err: GrammarError): { message: string; param: string } {
  const { fault } = err;
  switch (fault.kind) {
    case 'schema':
      return { message: `response_format.json_schema.schema ${err.message}`, param: 'response_format' };
    case 'tool_parameters': {
      const param = `tools[${fault.index}].function.parameters`;
      return { message: `${param} ${err.message}`, param };
    }
    case 'unknown_function':
      return { message: `tool_choice ${err.message}`, param: 'tool_choice' };
    case 'unclosable': {
      const field = GRAMMAR_FIELD[fault.grammar];
      return {
        message: `${field}'s smallest document is longer than ${fault.maxBytes} bytes: more than constrained decoding can promise to close within max_tokens`,
        param: field,
      };
    }
    case 'budget': {
      const { minTokens, maxTokens } = err as GrammarBudgetError;
      return {
        message: `${GRAMMAR_FIELD[fault.grammar]} needs at least ${minTokens} tokens for its smallest document, but max_tokens is ${maxTokens}`,
        param: 'max_tokens',
      };
    }
  }
}
