import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChatMessage, ChatTemplate, ToolDefinition } from './chat-template';
import { parseModelConfig } from './config';
import { ModelLoadError } from './errors';
import { ReasoningMarkers, reasoningMarkers } from './reasoning';
import { TextTokenizer } from './tokenizer';

/**
 * Messages (or tools) the model's chat template cannot render, or a model without a chat
 * template: the request is at fault, not the model.
 */
export class PromptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PromptError';
  }
}

/**
 * How a model turns chat messages into prompt tokens: its tokenizer, its chat template and its
 * context window. The inference worker renders every prompt with it; services in front of the
 * workers read the same files without the weights (readChatPrompt) to count a prompt's tokens
 * exactly as the worker that will run it.
 */
export class ChatPrompt {
  /** How the model marks reasoning apart from its answer; null when it does not. */
  readonly reasoning: ReasoningMarkers | null;

  constructor(
    readonly tokenizer: TextTokenizer,
    readonly chatTemplate: ChatTemplate | null,
    /** Most tokens a sequence may hold, prompt and reply (config.json max_position_embeddings). */
    readonly contextWindow: number,
  ) {
    this.reasoning = reasoningMarkers(tokenizer, chatTemplate);
  }

  /**
   * The prompt's token ids, ready to generate: the model's own chat template (given the
   * request's chat_template_kwargs, e.g. enable_thinking), then its tokenizer. Throws PromptError.
   */
  encode(messages: ChatMessage[], tools?: ToolDefinition[] | null, templateKwargs?: Record<string, unknown> | null): number[] {
    if (!this.chatTemplate) throw new PromptError('This model has no chat template (tokenizer_config.json chat_template)');
    // Templates know system, not the newer developer role, which means the same.
    const normalized = messages.map((m) => (m.role === 'developer' ? { ...m, role: 'system' } : m));
    let text: string;
    try {
      text = this.chatTemplate.render(normalized, { tools: tools ?? undefined, addGenerationPrompt: true, extra: templateKwargs ?? undefined });
    } catch (err) {
      throw new PromptError(`This model's chat template cannot render these messages${tools ? ' and tools' : ''}: ${(err as Error).message}`);
    }
    return this.tokenizer.encode(text);
  }

  /**
   * Tokens a reply may have after a prompt of `promptTokens`: `maxTokens`, or fewer where the
   * context window ends first (the reply then finishes with "length"). 0: the prompt leaves no
   * room for a single token, and cannot be served.
   */
  room(promptTokens: number, maxTokens: number): number {
    return Math.max(0, Math.min(maxTokens, this.contextWindow - promptTokens));
  }
}

/** A model directory's tokenizer and chat template (tokenizer.json, tokenizer_config.json). */
export function readTokenizerFiles(dir: string): { tokenizer: TextTokenizer; chatTemplate: ChatTemplate | null } {
  const tokenizerConfig = readJson(dir, 'tokenizer_config.json');
  const tokenizer = new TextTokenizer(readJson(dir, 'tokenizer.json'), tokenizerConfig);
  const template = tokenizerConfig['chat_template'] as string | { name: string; template: string }[] | undefined;
  const chatTemplate = template
    ? new ChatTemplate(template, { bos_token: tokenizer.specialToken('bos_token'), eos_token: tokenizer.specialToken('eos_token') })
    : null;
  return { tokenizer, chatTemplate };
}

/** The ChatPrompt of a model directory, read without its weights. */
export function readChatPrompt(dir: string): ChatPrompt {
  const config = parseModelConfig(readJson(dir, 'config.json'), path.join(dir, 'config.json'));
  const { tokenizer, chatTemplate } = readTokenizerFiles(dir);
  return new ChatPrompt(tokenizer, chatTemplate, config.maxPositionEmbeddings);
}

/** What a prompt of raw token ids is checked against before it is queued: its ids and its length. */
export interface ModelLimits {
  /** Token ids run from 0 to vocabSize - 1 (config.json vocab_size: the embedding's rows). */
  vocabSize: number;
  /** Most tokens a sequence may hold, prompt and reply (config.json max_position_embeddings). */
  contextWindow: number;
}

/** A model directory's ModelLimits, from its config.json alone. */
export function readModelLimits(dir: string): ModelLimits {
  const config = parseModelConfig(readJson(dir, 'config.json'), path.join(dir, 'config.json'));
  return { vocabSize: config.vocabSize, contextWindow: config.maxPositionEmbeddings };
}

export function readJson(dir: string, name: string): Record<string, unknown> {
  const file = path.join(dir, name);
  if (!fs.existsSync(file)) throw new ModelLoadError('missing file', file);
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ModelLoadError(`invalid JSON: ${(err as Error).message}`, file);
  }
}
