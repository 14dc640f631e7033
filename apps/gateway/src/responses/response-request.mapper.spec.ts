import { ServiceError } from '@trainyard/contracts';
import type { CreateResponseRequest } from './dto/create-response.request';
import { PlacedItem, toInputEntries } from './response-items';
import { toChatParams } from './response-request.mapper';

const limits = { defaultMaxTokens: 512, maxCompletionTokens: 1024 };
/** The request's own items, as ResponseState hands them over when nothing is stored. */
const itemsOf = (body: CreateResponseRequest) => toInputEntries(body.input) as PlacedItem[];
const map = (body: Partial<CreateResponseRequest>, earlier: PlacedItem[] = []) => {
  const full = { model: 'm', input: 'Hi', ...body } as CreateResponseRequest;
  return toChatParams(full, [...earlier, ...itemsOf(full)], limits);
};
const refusal = (body: Partial<CreateResponseRequest>) => {
  try {
    map(body);
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('expected a refusal');
};

describe('toChatParams', () => {
  it('makes a string input one user message after the instructions, with the chat defaults', () => {
    expect(map({ instructions: 'Be brief.' })).toEqual({
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      temperature: 1,
      top_p: 1,
      max_tokens: 512,
      n: 1,
      stop: [],
      seed: null,
      logprobs: false,
      top_logprobs: 0,
      response_format: { type: 'text' },
      tools: null,
      tool_choice: 'none',
      parallel_tool_calls: true,
      return_token_ids: false,
      chat_template_kwargs: null,
    });
  });

  it("gives a reasoning item's text to the assistant turn after it, and turns reasoning.effort none into enable_thinking false", () => {
    const params = map({
      input: [
        { role: 'user', content: 'Weather in Oslo?' },
        { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'Ask the tool.' }] },
        { type: 'function_call', call_id: 'c1', name: 'weather', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: '3 degrees' },
      ],
    });
    expect(params.messages[1]).toEqual({ role: 'assistant', content: null, reasoning_content: 'Ask the tool.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{}' } }] });
    expect(map({ reasoning: { effort: 'none' } }).chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(map({ reasoning: { effort: 'none' }, chat_template_kwargs: { enable_thinking: true } }).chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(map({ reasoning: { effort: 'high' } }).chat_template_kwargs).toBeNull();
    const error = refusal({ input: [{ type: 'reasoning', summary: 'not parts' }] });
    expect(error.details.param).toBe('input[0].content');
  });

  it('takes sampling settings and max_output_tokens, within the deployment limit', () => {
    expect(map({ temperature: 0, top_p: 0.5, max_output_tokens: 20 })).toMatchObject({ temperature: 0, top_p: 0.5, max_tokens: 20 });
    const body = { model: 'm', input: 'Hi' } as CreateResponseRequest;
    expect(toChatParams(body, itemsOf(body), { defaultMaxTokens: 512, maxCompletionTokens: 256 }).max_tokens).toBe(256);
    const error = refusal({ max_output_tokens: 2000 });
    expect({ code: error.code, param: error.details.param }).toEqual({ code: 'invalid_request', param: 'max_output_tokens' });
  });

  it('turns messages, function calls and their outputs into the chat conversation', () => {
    const params = map({
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Weather in ' }, { type: 'input_text', text: 'Oslo?' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', call_id: 'c1', name: 'weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call', call_id: 'c2', name: 'time', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: '3 degrees' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'noon' }] },
        { role: 'developer', content: 'Answer now.' },
      ],
    });
    expect(params.messages).toEqual([
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
          { id: 'c2', type: 'function', function: { name: 'time', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '3 degrees' },
      { role: 'tool', tool_call_id: 'c2', content: 'noon' },
      { role: 'developer', content: 'Answer now.' },
    ]);
  });

  it.each([
    [{ input: [{ type: 'function_call_output', call_id: 'nope', output: 'x' }] }, 'input[0].call_id'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input[0].content[0]'],
    [{ input: [{ role: 'tool', content: 'x' }] }, 'input[0].role'],
    [{ input: [{ role: 'user', content: 'a' }, { type: 'computer_call', action: {} }] }, 'input[1].type'],
    [{ input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input[0].call_id'],
    [{ top_logprobs: 3 }, 'top_logprobs'],
    [{ top_logprobs: 3, include: ['reasoning.encrypted_content'] }, 'top_logprobs'],
    [{ tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    [{ tools: [{ type: 'function', name: 'f', parameters: 'x' }] }, 'tools[0].parameters'],
    [{ tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }, { type: 'function', name: 'g', parameters: { type: 'string' } }] }, 'tools[1].parameters'],
    [{ tools: [{ type: 'function', name: 'f' }, { type: 'function', name: 'f' }] }, 'tools[1].name'],
    [{ tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', name: 'g' } }, 'tool_choice'],
    [{ tool_choice: 'required' }, 'tool_choice'],
  ] as [Partial<CreateResponseRequest>, string][])('refuses %j with 400 naming %s', (body, param) => {
    const error = refusal(body);
    expect(error.code).toBe('invalid_request');
    expect(error.details.param).toBe(param);
  });

  it('puts the earlier turns before the input, a call of theirs answerable by an output of this one', () => {
    const earlier: PlacedItem[] = [
      { item: { id: 'msg_1', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather?' }] }, at: 'previous_response_id' },
      { item: { id: 'fc_1', type: 'function_call', call_id: 'c1', name: 'weather', arguments: '{}' }, at: 'previous_response_id' },
    ];
    const params = map({ instructions: 'Be brief.', input: [{ type: 'function_call_output', call_id: 'c1', output: 'sunny' }] }, earlier);
    expect(params.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
    ]);
  });

  it('asks for logprobs when include names the output text\'s, with top_logprobs alternatives', () => {
    expect(map({})).toMatchObject({ logprobs: false, top_logprobs: 0 });
    expect(map({ include: ['message.output_text.logprobs'] })).toMatchObject({ logprobs: true, top_logprobs: 0 });
    expect(map({ include: ['message.output_text.logprobs'], top_logprobs: 5 })).toMatchObject({ logprobs: true, top_logprobs: 5 });
  });

  it('maps text.format to the response format', () => {
    expect(map({ text: { format: { type: 'json_object' } } }).response_format).toEqual({ type: 'json_object' });
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(map({ text: { format: { type: 'json_schema', name: 'thing', schema, strict: true } } }).response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'thing', schema, strict: true },
    });
  });

  it('maps flat function tools and tool_choice to the chat form; none keeps them described', () => {
    const tools = [{ type: 'function', name: 'weather', description: 'Weather', parameters: { type: 'object' }, strict: true }];
    expect(map({ tools, tool_choice: { type: 'function', name: 'weather' } })).toMatchObject({
      tools: [{ type: 'function', function: { name: 'weather', description: 'Weather', parameters: { type: 'object' }, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'weather' } },
    });
    expect(map({ tools, tool_choice: 'required' }).tool_choice).toBe('required');
    expect(map({ tools, tool_choice: 'none' })).toMatchObject({ tool_choice: 'none', tools: [{ function: { name: 'weather' } }] });
  });
});
