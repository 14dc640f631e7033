import { Inject, Injectable, Logger } from '@nestjs/common';
import { ChatCompletionParams, ServiceError } from '@trainyard/contracts';
import { ChatPrompt, PromptError, readChatPrompt } from '@trainyard/engine/wire';
import { ExpiringLru } from '@trainyard/runtime';
import { BaseModelFiles, BaseModelRef } from '../base-models/base-model-files';
import { ChatConfig } from '../config/chat.config';

/** A base model's files are read again after this, in case its directory was replaced. */
const PROMPT_TTL_MS = 10 * 60_000;

/**
 * A completion's prompt, counted before it is queued exactly as the inference worker will count
 * it: the resolved base model's tokenizer and chat template (read without the weights, from its
 * directory or its bundle: BaseModelFiles, and kept per base model), the tools rendered with
 * the messages. A prompt that
 * leaves no room for a reply in the model's context window is a 400 context_length_exceeded,
 * one the template cannot render a 400 naming `messages`, both answered at once. A longer
 * max_tokens is not refused: the worker stops the reply where the window ends ("length").
 */
@Injectable()
export class PromptValidation {
  private readonly logger = new Logger(PromptValidation.name);
  private readonly prompts: ExpiringLru<ChatPrompt>;
  /** Models already reported unreadable, so that each is logged once. */
  private readonly unreadable = new Set<string>();

  constructor(
    @Inject(ChatConfig) config: ChatConfig,
    private readonly files: BaseModelFiles,
  ) {
    this.prompts = new ExpiringLru({ maxEntries: config.PROMPT_TOKENIZER_CACHE_SIZE, ttlMs: PROMPT_TTL_MS });
  }

  async check(model: BaseModelRef, params: ChatCompletionParams): Promise<void> {
    const prompt = await this.promptOf(model);
    if (!prompt) return;
    let tokens: number;
    try {
      tokens = prompt.encode(params.messages, params.tools, params.chat_template_kwargs).length;
    } catch (err) {
      if (err instanceof PromptError) throw ServiceError.invalid(err.message, 'messages');
      throw err;
    }
    if (prompt.room(tokens, params.max_tokens) < 1) throw ServiceError.contextLengthExceeded(prompt.contextWindow, tokens, params.tools !== null);
  }

  /**
   * The base model's ChatPrompt, or null when this replica cannot read its files (a deployment
   * that does not mount the models): the worker's own check then refuses the prompt, later.
   */
  private async promptOf(model: BaseModelRef): Promise<ChatPrompt | null> {
    const key = this.files.keyOf(model);
    const cached = this.prompts.get(key);
    if (cached) return cached;
    try {
      const prompt = await this.files.read(model, readChatPrompt);
      this.prompts.set(key, prompt);
      this.unreadable.delete(key);
      return prompt;
    } catch (err) {
      if (!this.unreadable.has(key)) {
        this.unreadable.add(key);
        this.logger.warn(`Cannot read the tokenizer of ${key} (${(err as Error).message}): its prompts are checked by the inference worker only`);
      }
      return null;
    }
  }
}
