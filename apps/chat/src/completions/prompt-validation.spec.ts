import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChatCompletionParams, ErrorCode, FunctionTool, ServiceError } from '@trainyard/contracts';
import { makeModel } from '@trainyard/engine/files';
import { readChatPrompt } from '@trainyard/engine/wire';
import { chatCompletionParams } from '@trainyard/testing';
import { ChatConfig } from '../config/chat.config';
import { PromptValidation } from './prompt-validation';

const WINDOW = 96;
const TOOLS: FunctionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
];

function params(content: string, extra: Partial<ChatCompletionParams> = {}): ChatCompletionParams {
  return chatCompletionParams({ model: 'trainyard/tiny-chat', messages: [{ role: 'user', content }], ...extra });
}

function refusal(run: () => void): ServiceError {
  try {
    run();
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('PromptValidation', () => {
  let root: string;
  let dir: string;
  let validation: PromptValidation;
  /** The prompt's length as the worker counts it (ChatPrompt: the model's template and tokenizer). */
  let length: (p: ChatCompletionParams) => number;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'prompt-validation-'));
    dir = makeModel({ preset: 'tiny', out: join(root, 'tiny'), overrides: { maxPositionEmbeddings: WINDOW } }).dir;
    const prompt = readChatPrompt(dir);
    length = (p) => prompt.encode(p.messages, p.tools).length;
  });

  afterAll(() => rmSync(root, { recursive: true, force: true }));

  beforeEach(() => {
    validation = new PromptValidation(Object.assign(new ChatConfig(), { PROMPT_TOKENIZER_CACHE_SIZE: 2 }));
  });

  it('lets through a prompt that leaves room for a reply, however large max_tokens is', () => {
    const short = params('What is the weather?', { max_tokens: 10_000 });
    expect(length(short)).toBeLessThan(WINDOW);
    expect(() => validation.check(dir, short)).not.toThrow();
  });

  it("refuses a prompt the context window cannot hold with context_length_exceeded, in OpenAI's words", () => {
    const long = params('word '.repeat(200));
    const tokens = length(long);
    expect(tokens).toBeGreaterThan(WINDOW);
    const error = refusal(() => validation.check(dir, long));
    expect(error.code).toBe(ErrorCode.ContextLengthExceeded);
    expect(error.details.param).toBe('messages');
    expect(error.message).toBe(
      `This model's maximum context length is ${WINDOW} tokens, but the messages resulted in ${tokens} tokens, leaving no room for a reply. Please reduce the length of the messages.`,
    );
  });

  it('refuses at the same boundary as the worker: one token of reply must fit', () => {
    // Grow the prompt one word at a time until it no longer leaves room; the refusal starts exactly there.
    let words = 0;
    while (length(params('z '.repeat(words + 1))) < WINDOW) words++;
    const last = params('z '.repeat(words));
    const over = params('z '.repeat(words + 1));
    expect(length(last)).toBeLessThan(WINDOW);
    expect(length(over)).toBeGreaterThanOrEqual(WINDOW);
    expect(() => validation.check(dir, last)).not.toThrow();
    expect(refusal(() => validation.check(dir, over)).code).toBe(ErrorCode.ContextLengthExceeded);
  });

  it('counts the tools the template renders with the messages', () => {
    let words = 0;
    while (length(params('z '.repeat(words + 1), { tools: TOOLS })) < WINDOW) words++;
    const withoutTools = params('z '.repeat(words + 1));
    expect(length(withoutTools)).toBeLessThan(WINDOW);
    expect(() => validation.check(dir, withoutTools)).not.toThrow();
    const error = refusal(() => validation.check(dir, { ...withoutTools, tools: TOOLS }));
    expect(error.code).toBe(ErrorCode.ContextLengthExceeded);
    expect(error.message).toMatch(/the messages and tools resulted in \d+ tokens/);
  });

  it('refuses messages the chat template cannot render, naming messages', () => {
    const broken = makeModel({ preset: 'tiny', out: join(root, 'broken') }).dir;
    const configFile = join(broken, 'tokenizer_config.json');
    const config = JSON.parse(readFileSync(configFile, 'utf8'));
    writeFileSync(configFile, JSON.stringify({ ...config, chat_template: "{{ raise_exception('roles must alternate') }}" }));
    const error = refusal(() => validation.check(broken, params('hi')));
    expect(error.code).toBe(ErrorCode.InvalidRequest);
    expect(error.details.param).toBe('messages');
    expect(error.message).toMatch(/chat template cannot render these messages: .*roles must alternate/);
  });

  it("leaves a model whose files it cannot read to the worker's own check", () => {
    expect(() => validation.check(join(root, 'missing'), params('word '.repeat(200)))).not.toThrow();
  });
});
