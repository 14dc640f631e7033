import { ChatTemplate } from '../../src/chat-template';
import { CHAT_TEMPLATE } from '../../src/maker/tokenizer-files';
import { detectToolCallFormat, parseToolCalls } from '../../src/tools';
import qwen from '../fixtures/qwen2.5-0.5b-instruct.tokenizer_config.json';
import smollm from '../fixtures/smollm2-135m-instruct.tokenizer_config.json';

/** The part of a Llama 3.1 template that teaches its JSON call format. */
const LLAMA3_TEMPLATE_EXCERPT = `{{- 'Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\\n\\n' }}
{{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
{%- if builtin_tools is defined %}{{- "Environment: ipython\\n" }}{%- endif %}`;

const calls = (text: string, format = 'hermes' as const) => parseToolCalls(text, format);

describe('detectToolCallFormat', () => {
  it('recognises hermes templates by <tool_call>', () => {
    expect(detectToolCallFormat(CHAT_TEMPLATE)).toBe('hermes');
    expect(detectToolCallFormat(qwen.chat_template as string)).toBe('hermes');
  });

  it('recognises Llama 3 JSON templates and templates without tools', () => {
    expect(detectToolCallFormat(LLAMA3_TEMPLATE_EXCERPT)).toBe('llama3-json');
    expect(detectToolCallFormat(smollm.chat_template as string)).toBe('none');
  });
});

describe('parseToolCalls, hermes', () => {
  it('parses one call, arguments as a JSON string, with an OpenAI-style id', () => {
    const out = calls('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>');
    expect(out.content).toBeNull();
    expect(out.toolCalls).toHaveLength(1);
    expect(out.toolCalls[0]).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    expect(JSON.parse(out.toolCalls[0].function.arguments)).toEqual({ city: 'Paris', days: 2 });
    expect(out.toolCalls[0].id).toMatch(/^call_[A-Za-z0-9]{24}$/);
  });

  it('parses several calls with distinct ids and keeps the text before them', () => {
    const out = calls(
      'Let me check both.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {"x": [1, "}"]}}\n</tool_call>',
    );
    expect(out.content).toBe('Let me check both.');
    expect(out.toolCalls.map((c) => c.function.name)).toEqual(['a', 'b']);
    expect(JSON.parse(out.toolCalls[1].function.arguments)).toEqual({ x: [1, '}'] });
    expect(new Set(out.toolCalls.map((c) => c.id)).size).toBe(2);
  });

  it('accepts a call whose closing tag was cut off, and arguments given as a string', () => {
    const out = calls('<tool_call>\n{"name": "f", "arguments": "{\\"q\\": 1}"}');
    expect(out.toolCalls.map((c) => [c.function.name, c.function.arguments])).toEqual([['f', '{"q":1}']]);
  });

  it('leaves malformed calls in the content', () => {
    for (const text of [
      'Just an answer.',
      '<tool_call>\n{"name": "f", "arguments": {"q": 1}\n</tool_call>',
      '<tool_call>\n{"arguments": {}}\n</tool_call>',
      '<tool_call>\n{"name": "f", "arguments": [1, 2]}\n</tool_call>',
      '<tool_call>\nnot json\n</tool_call>',
    ]) {
      expect(calls(text)).toEqual({ content: text, toolCalls: [] });
    }
  });

  it('keeps a broken block in the content next to a good one', () => {
    const out = calls('<tool_call>{oops}</tool_call><tool_call>{"name": "ok", "arguments": {}}</tool_call>');
    expect(out.toolCalls.map((c) => c.function.name)).toEqual(['ok']);
    expect(out.content).toBe('<tool_call>{oops}</tool_call>');
  });

  it('reads back what the chat template renders for an assistant turn with tool calls', () => {
    const toolCalls = [
      { id: 'call_1', type: 'function' as const, function: { name: 'search', arguments: '{"query": "tfjs wasm", "limit": 3}' } },
      { id: 'call_2', type: 'function' as const, function: { name: 'now', arguments: '{}' } },
    ];
    const rendered = new ChatTemplate(CHAT_TEMPLATE).render([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Searching.', tool_calls: toolCalls }], {
      addGenerationPrompt: false,
    });
    const reply = rendered.split('<|im_start|>assistant\n')[1].replace(/<\|im_end\|>\n$/, '');
    const out = calls(reply);
    expect(out.content).toBe('Searching.');
    expect(out.toolCalls.map((c) => ({ name: c.function.name, args: JSON.parse(c.function.arguments) }))).toEqual([
      { name: 'search', args: { query: 'tfjs wasm', limit: 3 } },
      { name: 'now', args: {} },
    ]);
  });
});

describe('parseToolCalls, llama3-json', () => {
  const llama = (text: string) => parseToolCalls(text, 'llama3-json');

  it('parses a reply that is one call with parameters', () => {
    const out = llama('{"name": "get_weather", "parameters": {"city": "Oslo"}}');
    expect(out.content).toBeNull();
    expect(out.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['get_weather', { city: 'Oslo' }]]);
  });

  it('parses <|python_tag|> and several calls separated by semicolons', () => {
    const out = llama('<|python_tag|>{"name": "a", "parameters": {"s": "x; {y}"}}; {"name": "b", "arguments": {"n": 2}}');
    expect(out.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['a', { s: 'x; {y}' }],
      ['b', { n: 2 }],
    ]);
  });

  it('treats prose, text around JSON and malformed JSON as content', () => {
    for (const text of [
      'The weather is fine.',
      'Here: {"name": "a", "parameters": {}}',
      '{"name": "a", "parameters": {}} and then some',
      '{"name": "a", "parameters": {',
      '{"title": "not a call"}',
    ]) {
      expect(llama(text)).toEqual({ content: text, toolCalls: [] });
    }
  });
});

describe('parseToolCalls, none', () => {
  it('returns the text as content', () => {
    const text = '<tool_call>{"name": "a", "arguments": {}}</tool_call>';
    expect(parseToolCalls(text, 'none')).toEqual({ content: text, toolCalls: [] });
  });
});
