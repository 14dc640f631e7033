import { ChatTemplate } from '../../src/chat-template';
import { CHAT_TEMPLATE } from '../../src/maker/tokenizer-files';
import { detectToolCallFormat, ReplyPart, ToolCallStream, toolCallSyntax } from '../../src/tools';
import qwen from '../fixtures/qwen2.5-0.5b-instruct.tokenizer_config.json';
import smollm from '../fixtures/smollm2-135m-instruct.tokenizer_config.json';

/** The part of a Llama 3.1 template that teaches its JSON call format. */
const LLAMA3_TEMPLATE_EXCERPT = `{{- 'Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\\n\\n' }}
{{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
{%- if builtin_tools is defined %}{{- "Environment: ipython\\n" }}{%- endif %}`;

/** Streams `pieces` through a ToolCallStream; returns the parts as streamed and the whole message. */
function stream(pieces: string[], format: 'hermes' | 'llama3-json' = 'hermes') {
  const parser = new ToolCallStream(toolCallSyntax(format));
  const parts: ReplyPart[] = [];
  for (const piece of pieces) parts.push(...parser.push(piece));
  parts.push(...parser.end());
  return { parts, ...parser.result() };
}

/** The same text cut into single characters, and into pieces of three. */
const cuts = (text: string) => [[...text], text.match(/[\s\S]{1,3}/g) ?? []];

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


describe('ToolCallStream, hermes', () => {
  const TWO_CALLS =
    'Let me check both.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {"x": [1, "}"]}}\n</tool_call>';

  it('splits text and calls, however the text is cut, with distinct OpenAI-style ids', () => {
    for (const pieces of cuts(TWO_CALLS)) {
      const out = stream(pieces);
      expect(out.content).toBe('Let me check both.');
      expect(out.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
        ['a', {}],
        ['b', { x: [1, '}'] }],
      ]);
      expect(out.toolCalls.every((c) => /^call_[A-Za-z0-9]{24}$/.test(c.id))).toBe(true);
      expect(new Set(out.toolCalls.map((c) => c.id)).size).toBe(2);
      // Streamed: the text, then each call's opening piece, then its arguments; nothing of the markup.
      const text = out.parts.filter((p) => p.kind === 'text').map((p) => (p as { text: string }).text).join('');
      expect(text).toBe('Let me check both.');
      const opened = out.parts.filter((p) => p.kind === 'call');
      expect(opened.map((p) => p.kind === 'call' && [p.index, p.name, p.id])).toEqual(out.toolCalls.map((c, i) => [i, c.function.name, c.id]));
      for (const [i, call] of out.toolCalls.entries()) {
        const args = out.parts.filter((p) => p.kind === 'arguments' && p.index === i).map((p) => (p as { text: string }).text);
        expect(args.join('')).toBe(call.function.arguments);
      }
    }
  });

  it('gives back a reply without calls exactly, including text that only looked like the start of one', () => {
    for (const text of ['Just an answer.', 'a <tool_ and more', 'ends with <tool_c', 'spaces  \n\n', 'x < y']) {
      for (const pieces of cuts(text)) {
        const out = stream(pieces);
        expect(out.content).toBe(text);
        expect(out.toolCalls).toEqual([]);
        expect(out.parts.map((p) => (p as { text: string }).text).join('')).toBe(text);
      }
    }
  });

  it('holds back what may open a call until it is known, and drops the whitespace before a call', () => {
    const parser = new ToolCallStream(toolCallSyntax('hermes'));
    expect(parser.push('Hi <tool')).toEqual([{ kind: 'text', text: 'Hi' }]);
    const parts = parser.push('_call>\n{"name": "f", "arguments": {"q": 1');
    expect(parts).toEqual([
      { kind: 'call', index: 0, id: expect.stringMatching(/^call_/), name: 'f' },
      { kind: 'arguments', index: 0, text: '{"q": 1' },
    ]);
    expect(parser.push('}}\n</tool_call>')).toEqual([{ kind: 'arguments', index: 0, text: '}' }]);
    expect(parser.result()).toEqual({ content: 'Hi', toolCalls: [{ id: expect.any(String), type: 'function', function: { name: 'f', arguments: '{"q": 1}' } }] });
  });

  it('leaves out a call cut off before its arguments closed', () => {
    const out = stream(['<tool_call>\n{"name": "f", "arguments": {"q": ']);
    expect(out.toolCalls).toEqual([]);
    expect(out.content).toBe('');
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
    const out = stream([reply]);
    expect(out.content).toBe('Searching.');
    expect(out.toolCalls.map((c) => ({ name: c.function.name, args: JSON.parse(c.function.arguments) }))).toEqual([
      { name: 'search', args: { query: 'tfjs wasm', limit: 3 } },
      { name: 'now', args: {} },
    ]);
  });
});

describe('ToolCallStream, llama3-json', () => {
  it('parses a reply that is one call with parameters', () => {
    for (const pieces of cuts('{"name": "get_weather", "parameters": {"city": "Oslo; {x}"}}')) {
      const out = stream(pieces, 'llama3-json');
      expect(out.content).toBeNull();
      expect(out.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['get_weather', { city: 'Oslo; {x}' }]]);
    }
  });

  it('treats prose and other JSON as content', () => {
    for (const text of ['The weather is fine.', '{"title": "not a call"}']) {
      expect(stream([text], 'llama3-json')).toMatchObject({ content: text, toolCalls: [] });
    }
  });
});
