import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArtifactCache, DiskArtifactStore, putBundleFromDir } from '@trainyard/artifacts';
import { ChatCompletionParams, ErrorCode, FunctionTool, ServiceError } from '@trainyard/contracts';
import { makeModel } from '@trainyard/engine/files';
import { readChatPrompt } from '@trainyard/engine/wire';
import { chatCompletionParams } from '@trainyard/testing';
import { BaseModelFiles } from '../base-models/base-model-files';
import { ChatConfig } from '../config/chat.config';
import { PromptValidation } from './prompt-validation';

const WINDOW = 96;
const TOOLS: FunctionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
];

function params(content: string, extra: Partial<ChatCompletionParams> = {}): ChatCompletionParams {
  return chatCompletionParams({ model: 'trainyard/tiny-chat', messages: [{ role: 'user', content }], ...extra });
}

async function refusal(run: () => Promise<void>): Promise<ServiceError> {
  try {
    await run();
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

/** A base model as the registry resolves it: its directory, and no bundle. */
const onVolume = (dir: string) => ({ base_model_dir: dir, base_model_bundle: null });

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
    const config = Object.assign(new ChatConfig(), { PROMPT_TOKENIZER_CACHE_SIZE: 2 });
    validation = new PromptValidation(config, new BaseModelFiles(config));
  });

  it('lets through a prompt that leaves room for a reply, however large max_tokens is', async () => {
    const short = params('What is the weather?', { max_tokens: 10_000 });
    expect(length(short)).toBeLessThan(WINDOW);
    await expect(validation.check(onVolume(dir), short)).resolves.toBeUndefined();
  });

  it("refuses a prompt the context window cannot hold with context_length_exceeded, in OpenAI's words", async () => {
    const long = params('word '.repeat(200));
    const tokens = length(long);
    expect(tokens).toBeGreaterThan(WINDOW);
    const error = await refusal(() => validation.check(onVolume(dir), long));
    expect(error.code).toBe(ErrorCode.ContextLengthExceeded);
    expect(error.details.param).toBe('messages');
    expect(error.message).toBe(
      `This model's maximum context length is ${WINDOW} tokens, but the messages resulted in ${tokens} tokens, leaving no room for a reply. Please reduce the length of the messages.`,
    );
  });

  it('refuses at the same boundary as the worker: one token of reply must fit', async () => {
    // Grow the prompt one word at a time until it no longer leaves room; the refusal starts exactly there.
    let words = 0;
    while (length(params('z '.repeat(words + 1))) < WINDOW) words++;
    const last = params('z '.repeat(words));
    const over = params('z '.repeat(words + 1));
    expect(length(last)).toBeLessThan(WINDOW);
    expect(length(over)).toBeGreaterThanOrEqual(WINDOW);
    await expect(validation.check(onVolume(dir), last)).resolves.toBeUndefined();
    expect((await refusal(() => validation.check(onVolume(dir), over))).code).toBe(ErrorCode.ContextLengthExceeded);
  });

  it('counts the tools the template renders with the messages', async () => {
    let words = 0;
    while (length(params('z '.repeat(words + 1), { tools: TOOLS })) < WINDOW) words++;
    const withoutTools = params('z '.repeat(words + 1));
    expect(length(withoutTools)).toBeLessThan(WINDOW);
    await expect(validation.check(onVolume(dir), withoutTools)).resolves.toBeUndefined();
    const error = await refusal(() => validation.check(onVolume(dir), { ...withoutTools, tools: TOOLS }));
    expect(error.code).toBe(ErrorCode.ContextLengthExceeded);
    expect(error.message).toMatch(/the messages and tools resulted in \d+ tokens/);
  });

  it('refuses messages the chat template cannot render, naming messages', async () => {
    const broken = makeModel({ preset: 'tiny', out: join(root, 'broken') }).dir;
    const configFile = join(broken, 'tokenizer_config.json');
    const config = JSON.parse(readFileSync(configFile, 'utf8'));
    writeFileSync(configFile, JSON.stringify({ ...config, chat_template: "{{ raise_exception('roles must alternate') }}" }));
    const error = await refusal(() => validation.check(onVolume(broken), params('hi')));
    expect(error.code).toBe(ErrorCode.InvalidRequest);
    expect(error.details.param).toBe('messages');
    expect(error.message).toMatch(/chat template cannot render these messages: .*roles must alternate/);
  });

  it("leaves a model whose files it cannot read to the worker's own check", async () => {
    await expect(validation.check(onVolume(join(root, 'missing')), params('word '.repeat(200)))).resolves.toBeUndefined();
  });

  it('reads a published model from the artifact store, without its weights, when BASE_MODEL_SOURCE=store', async () => {
    const store = new DiskArtifactStore(join(root, 'store'));
    const bundle = (await putBundleFromDir(store, dir)).sha256;
    const config = Object.assign(new ChatConfig(), { BASE_MODEL_SOURCE: 'store' as const });
    const cache = new ArtifactCache(store, { dir: join(root, 'cache'), maxBytes: 64 * 2 ** 20 });
    const fromStore = new PromptValidation(config, new BaseModelFiles(config, cache));
    // No directory here: only the bundle can answer.
    const published = { base_model_dir: join(root, 'not-mounted'), base_model_bundle: bundle };
    const long = params('word '.repeat(200));
    expect((await refusal(() => fromStore.check(published, long))).code).toBe(ErrorCode.ContextLengthExceeded);
    await expect(fromStore.check(published, params('hi'))).resolves.toBeUndefined();
    expect(cache.bytes).toBeGreaterThan(0);
    expect(cache.bytes).toBeLessThan(statSync(join(dir, 'model.safetensors')).size);
    await cache.close();
  });
});
