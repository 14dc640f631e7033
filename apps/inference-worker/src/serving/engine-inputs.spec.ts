import type { ChatCompletionParams } from '@trainyard/contracts';
import { GrammarBudgetError, GrammarError, toolCallSyntax } from '@trainyard/engine';
import { grammarRefusal, grammarSpec, toolCallRequest } from './engine-inputs';

describe("the inference worker's mapping to the engine's inputs", () => {
  it('maps response_format to a grammar spec: none for text, any object, or the schema in strict mode', () => {
    const schema = { type: 'object', properties: { a: { type: 'integer' } } };
    expect(grammarSpec({ type: 'text' })).toBeNull();
    expect(grammarSpec({ type: 'json_object' })).toEqual({ kind: 'any_object' });
    expect(grammarSpec({ type: 'json_schema', json_schema: { name: 'x' } })).toEqual({ kind: 'any_object' });
    expect(grammarSpec({ type: 'json_schema', json_schema: { name: 'x', schema, strict: false } })).toEqual({ kind: 'schema', schema, strict: true });
  });

  it('maps the tool fields to a tool-call request', () => {
    const params = {
      tools: [
        { type: 'function', function: { name: 'a', parameters: { type: 'object' } } },
        { type: 'function', function: { name: 'b' } },
      ],
      tool_choice: { type: 'function', function: { name: 'b' } },
      parallel_tool_calls: false,
    } as ChatCompletionParams;
    const syntax = toolCallSyntax('hermes');
    expect(toolCallRequest(params, syntax)).toEqual({
      syntax,
      tools: [
        { name: 'a', parameters: { type: 'object' } },
        { name: 'b', parameters: undefined },
      ],
      calls: { only: 'b' },
      parallel: false,
    });
    expect(toolCallRequest({ ...params, tool_choice: 'required' }, syntax).calls).toBe('required');
    expect(toolCallRequest({ ...params, tool_choice: 'auto' }, syntax).calls).toBe('optional');
  });

  it('names the request field of each grammar fault', () => {
    expect(grammarRefusal(new GrammarError('cannot be compiled: bad type', { kind: 'schema' }))).toEqual({
      message: 'response_format.json_schema.schema cannot be compiled: bad type',
      param: 'response_format',
    });
    expect(grammarRefusal(new GrammarError('must be a JSON schema object', { kind: 'tool_parameters', index: 2 }))).toEqual({
      message: 'tools[2].function.parameters must be a JSON schema object',
      param: 'tools[2].function.parameters',
    });
    expect(grammarRefusal(new GrammarError('names "x", which is not among the tools', { kind: 'unknown_function' }))).toEqual({
      message: 'tool_choice names "x", which is not among the tools',
      param: 'tool_choice',
    });
    expect(grammarRefusal(new GrammarBudgetError(12, 4, 'json'))).toEqual({
      message: 'response_format needs at least 12 tokens for its smallest document, but max_tokens is 4',
      param: 'max_tokens',
    });
    expect(grammarRefusal(new GrammarBudgetError(9, 3, 'tool_calls'))).toMatchObject({ message: expect.stringMatching(/^tool_choice needs at least 9 tokens/), param: 'max_tokens' });
    expect(grammarRefusal(new GrammarError('too long', { kind: 'unclosable', grammar: 'json', maxBytes: 1024 }))).toEqual({
      message: "response_format's smallest document is longer than 1024 bytes: more than constrained decoding can promise to close within max_tokens",
      param: 'response_format',
    });
  });
});
