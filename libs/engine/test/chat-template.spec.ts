import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChatMessage, ChatTemplate } from '../src/chat-template';
import { GEMMA3_CHAT_TEMPLATE, QWEN3_CHAT_TEMPLATE } from '../src/maker/chat-templates';
import { detectToolCallFormat } from '../src/tools';
import { loadModel } from '../src/loader';
import { PromptError, readChatPrompt } from '../src/prompt';
import { makeTiny, useBackend } from './helpers';

/** chat_template strings of real model families, copied from their tokenizer_config.json. */
function familyTemplate(name: string): ChatTemplate {
  const config = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', `${name}.tokenizer_config.json`), 'utf8'));
  return new ChatTemplate(config.chat_template, { bos_token: config.bos_token, eos_token: config.eos_token });
}

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('chat templates of real families', () => {
  it('renders SmolLM2-Instruct with its default system prompt', () => {
    const t = familyTemplate('smollm2-135m-instruct');
    expect(t.render([{ role: 'user', content: 'Hi!' }])).toBe(
      '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' +
        '<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(
      t.render(
        [
          { role: 'system', content: 'Be terse.' },
          { role: 'user', content: 'Hi!' },
          { role: 'assistant', content: 'Hello.' },
        ],
        { addGenerationPrompt: false },
      ),
    ).toBe('<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n');
  });

  it('renders Qwen2.5-Instruct, with tools, tool calls and tool responses', () => {
    const t = familyTemplate('qwen2.5-0.5b-instruct');
    expect(t.render([{ role: 'user', content: 'Hi!' }])).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' +
        '<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n',
    );
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
      },
      { role: 'tool', content: '{"temp": 21}', tool_call_id: 'c1' },
    ];
    expect(t.supportsTools).toBe(true);
    expect(t.render(messages, { tools: [WEATHER_TOOL] })).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\n' +
        'You may call one or more functions to assist with the user query.\n\n' +
        'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
        '{"type": "function", "function": {"name": "get_weather", "description": "Current weather", "parameters": ' +
        '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n</tools>\n\n' +
        'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\nWeather in Paris?<|im_end|>\n' +
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });
});

/** The messages clients send in an agent loop: system, developer, a call and its result, the next question. */
const AGENT_TURNS: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Weather in Oslo?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: '3 degrees' },
  { role: 'assistant', content: 'It is 3 degrees.' },
  { role: 'user', content: 'And tomorrow?' },
];

describe('chat templates of the families people train now, as published', () => {
  it("renders Qwen3's: tools in the system turn, <tool_call> blocks, results as <tool_response> user turns, thinking switched by enable_thinking", () => {
    const t = new ChatTemplate(QWEN3_CHAT_TEMPLATE);
    const text = t.render(AGENT_TURNS, { tools: [WEATHER_TOOL] });
    expect(text).toContain('<|im_start|>system\nBe brief.\n\n# Tools');
    expect(text).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>');
    expect(text).toContain('<|im_start|>user\n<tool_response>\n3 degrees\n</tool_response><|im_end|>');
    expect(text.endsWith('<|im_start|>user\nAnd tomorrow?<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
    expect(t.render([{ role: 'user', content: 'Hi' }], { extra: { enable_thinking: false } }).endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    expect(detectToolCallFormat(t.source)).toBe('hermes');
  });

  it("renders Llama 3.2's: tools in the first user turn, one JSON call with parameters, results as ipython turns", () => {
    const t = familyTemplate('llama-3.2-1b-instruct');
    const text = t.render(AGENT_TURNS, { tools: [WEATHER_TOOL], extra: { date_string: '28 Nov 2026' } });
    expect(text.startsWith('<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 28 Nov 2026\n\nBe brief.<|eot_id|>')).toBe(true);
    expect(text).toContain('"name": "get_weather"');
    expect(text).toContain('Weather in Oslo?<|eot_id|>');
    expect(text).toContain('<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Oslo"}}<|eot_id|>');
    expect(text).toContain('<|start_header_id|>ipython<|end_header_id|>\n\n');
    expect(text.endsWith('<|start_header_id|>user<|end_header_id|>\n\nAnd tomorrow?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n')).toBe(true);
    expect(detectToolCallFormat(t.source)).toBe('llama3-json');
  });

  it("renders Gemma 3's, which has no tool syntax: the tools, calls and results as hermes text in alternating turns", () => {
    const t = new ChatTemplate(GEMMA3_CHAT_TEMPLATE, { bos_token: '<bos>' });
    expect(t.supportsTools).toBe(false);
    expect(detectToolCallFormat(t.source)).toBe('none');
    const text = t.render(AGENT_TURNS, { tools: [WEATHER_TOOL] });
    expect(text.startsWith('<bos><start_of_turn>user\nBe brief.\n\n# Tools')).toBe(true);
    expect(text).toContain(JSON.stringify(WEATHER_TOOL));
    expect(text).toContain('Weather in Oslo?<end_of_turn>\n<start_of_turn>model\n<tool_call>\n{"name": "get_weather", "arguments": {"city":"Oslo"}}\n</tool_call><end_of_turn>');
    expect(text).toContain('<start_of_turn>user\n<tool_response>\n3 degrees\n</tool_response><end_of_turn>');
    expect(text.endsWith('<start_of_turn>user\nAnd tomorrow?<end_of_turn>\n<start_of_turn>model\n')).toBe(true);
    // Without tools, a plain conversation renders as Gemma's own template does.
    expect(t.render([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }])).toBe('<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n');
  });
});

describe("the model maker's tokenizer and template", () => {
  it('tokenizes through @huggingface/tokenizers: round trip, special tokens as single ids', async () => {
    await useBackend('cpu');
    const lm = await loadModel(makeTiny('tok'));
    const text = 'The capital of France is Paris. function add(a, b) { return a + b; } 今日は 🚂';
    const ids = lm.tokenizer.encode(text);
    expect(lm.tokenizer.decode(ids)).toBe(text);
    expect(ids.length).toBeLessThan(new TextEncoder().encode(text).length); // merges were learned
    const prompt = (lm.chatTemplate as ChatTemplate).render([{ role: 'user', content: 'Hi' }]);
    const promptIds = lm.tokenizer.encode(prompt);
    expect(promptIds[0]).toBe(1);
    expect(promptIds.filter((id) => id === 2)).toHaveLength(1);
    expect(lm.tokenizer.decode(promptIds, { skipSpecialTokens: false })).toBe(prompt);
    expect(lm.tokenizer.isSpecial(2)).toBe(true);
    lm.dispose();
  });

  it('renders tools and tool calls in the ChatML template it ships', async () => {
    const config = JSON.parse(fs.readFileSync(path.join(makeTiny('tpl'), 'tokenizer_config.json'), 'utf8'));
    const t = new ChatTemplate(config.chat_template);
    const out = t.render(
      [
        { role: 'system', content: 'Sys.' },
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Oslo' } } }] },
        { role: 'tool', content: 'cold' },
      ],
      { tools: [WEATHER_TOOL] },
    );
    expect(out).toContain('<|im_start|>system\nSys.\n\n# Tools');
    expect(out).toContain('<tools>\n{"type": "function"');
    expect(out).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>\n');
    expect(out.endsWith('<|im_start|>tool\ncold<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
    expect(t.render([{ role: 'user', content: 'x' }])).toBe('<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n');
  });
});

describe('ChatPrompt', () => {
  it('counts a prompt read without the weights exactly as the loaded model does', async () => {
    await useBackend('cpu');
    const dir = makeTiny('prompt', { overrides: { maxPositionEmbeddings: 512 } });
    const lm = await loadModel(dir);
    const read = readChatPrompt(dir);
    const messages: ChatMessage[] = [
      { role: 'developer', content: 'Be terse.' },
      { role: 'user', content: 'Weather in Oslo?' },
    ];
    expect(read.encode(messages, [WEATHER_TOOL])).toEqual(lm.prompt.encode(messages, [WEATHER_TOOL]));
    expect(read.encode(messages)).toEqual(lm.prompt.encode(messages));
    expect(read.contextWindow).toBe(512);
    expect(lm.prompt.contextWindow).toBe(512);
    // The developer role renders as system, which the templates know.
    expect(lm.tokenizer.decode(read.encode(messages), { skipSpecialTokens: false })).toContain('<|im_start|>system\nBe terse.<|im_end|>');
    lm.dispose();
  });

  it('leaves a reply max_tokens, or what the window has left, or nothing', () => {
    const prompt = readChatPrompt(makeTiny('room', { overrides: { maxPositionEmbeddings: 100 } }));
    expect(prompt.room(40, 16)).toBe(16);
    expect(prompt.room(90, 16)).toBe(10);
    expect(prompt.room(99, 16)).toBe(1);
    expect(prompt.room(100, 16)).toBe(0);
    expect(prompt.room(150, 16)).toBe(0);
  });

  it('refuses a model without a chat template with a PromptError', () => {
    const dir = makeTiny('no-template');
    const file = path.join(dir, 'tokenizer_config.json');
    const { chat_template: _dropped, ...config } = JSON.parse(fs.readFileSync(file, 'utf8'));
    fs.writeFileSync(file, JSON.stringify(config));
    expect(() => readChatPrompt(dir).encode([{ role: 'user', content: 'hi' }])).toThrow(PromptError);
  });
});
