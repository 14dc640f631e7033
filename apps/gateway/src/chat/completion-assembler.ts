import type { InferenceEvent, StartCompletionReply, TokenInfo, ToolCallOutput } from '@trainyard/contracts';

/**
 * Folds a completion's InferenceEvents into the OpenAI shapes: the whole response for a
 * plain request, or `chat.completion.chunk`s for a streamed one. Pure: no I/O, so every
 * shape decision is unit-tested here.
 */
export class CompletionAssembler {
  readonly created = Math.floor(Date.now() / 1000);
  private promptTokenIds: number[] = [];
  private usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details?: { cached_tokens: number };
  } | null = null;
  private readonly choices = new Map<number, ChoiceState>();

  constructor(
    readonly id: string,
    private readonly started: StartCompletionReply,
    private readonly options: { n: number; returnTokenIds: boolean },
  ) {}

  get done(): boolean {
    return this.usage !== null;
  }

  /** Applies one event; returns the stream chunks it produces (possibly none). */
  apply(event: InferenceEvent): Record<string, unknown>[] {
    switch (event.type) {
      case 'prompt':
        this.promptTokenIds = event.prompt_token_ids;
        return Array.from({ length: this.options.n }, (_, index) => this.chunk(index, { role: 'assistant', content: '' }, null, null));
      case 'delta': {
        const choice = this.choice(event.index);
        choice.content += event.text;
        if (event.reasoning) choice.reasoning = (choice.reasoning ?? '') + event.reasoning;
        choice.tokens.push(...event.tokens);
        return [this.chunk(event.index, this.delta(event), null, this.logprobs(event.tokens))];
      }
      case 'finish': {
        const choice = this.choice(event.index);
        choice.finishReason = event.finish_reason;
        choice.content = event.content ?? '';
        choice.toolCalls = event.tool_calls;
        choice.reasoning = event.reasoning_content ?? null;
        choice.completionTokenIds = event.completion_token_ids;
        // Text and tool calls were streamed as they were generated: the last chunk only ends the choice.
        return [this.chunk(event.index, {}, event.finish_reason, null)];
      }
      case 'done': {
        const { prompt_tokens, completion_tokens, cached_tokens } = event.usage;
        this.usage = {
          prompt_tokens,
          completion_tokens,
          total_tokens: prompt_tokens + completion_tokens,
          ...(cached_tokens === undefined ? {} : { prompt_tokens_details: { cached_tokens } }),
        };
        return [];
      }
      case 'accepted':
      case 'error':
        return [];
    }
  }

  usageChunk(): Record<string, unknown> {
    return { ...this.envelope('chat.completion.chunk'), choices: [], usage: this.usage };
  }

  response(): Record<string, unknown> {
    const choices = [...this.choices.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, choice]) => ({
        index,
        message: {
          role: 'assistant',
          content: choice.toolCalls && !choice.content ? null : choice.content,
          // vLLM's and DeepSeek's field for the reasoning before the answer (reasoning models only).
          ...(choice.reasoning === null ? {} : { reasoning_content: choice.reasoning }),
          ...(choice.toolCalls ? { tool_calls: choice.toolCalls } : {}),
        },
        logprobs: this.started.logprobs ? { content: this.logprobs(choice.tokens) } : null,
        finish_reason: choice.finishReason,
        ...(this.options.returnTokenIds ? { token_ids: choice.completionTokenIds } : {}),
      }));
    return {
      ...this.envelope('chat.completion'),
      choices,
      usage: this.usage,
      ...(this.options.returnTokenIds ? { prompt_token_ids: this.promptTokenIds } : {}),
    };
  }

  /**
   * A delta in OpenAI's shape: text as `content`; reasoning as `reasoning_content`; a tool
   * call as `tool_calls`, whose first piece carries id, type and name with empty arguments,
   * and whose later pieces only argument text; a token of call markup alone as an empty delta
   * (its logprobs still go with it).
   */
  private delta(event: InferenceEvent & { type: 'delta' }): Record<string, unknown> {
    if (event.reasoning) return { reasoning_content: event.reasoning };
    const call = event.tool_call;
    if (!call) return event.text || event.tokens.length === 0 ? { content: event.text } : {};
    const fn = call.name === undefined ? { arguments: call.arguments } : { name: call.name, arguments: call.arguments };
    return { tool_calls: [{ index: call.index, ...(call.id === undefined ? {} : { id: call.id, type: 'function' }), function: fn }] };
  }

  private chunk(index: number, delta: Record<string, unknown>, finishReason: string | null, logprobs: unknown[] | null) {
    return {
      ...this.envelope('chat.completion.chunk'),
      choices: [{ index, delta, logprobs: logprobs && this.started.logprobs ? { content: logprobs } : null, finish_reason: finishReason }],
    };
  }

  private envelope(object: string) {
    return {
      id: this.id,
      object,
      created: this.created,
      model: this.started.model,
      system_fingerprint: null,
      // Our addition: which weights served this (null for a base model).
      checkpoint_step: this.started.checkpoint_step,
    };
  }

  private logprobs(tokens: TokenInfo[]) {
    return tokens.map((t) => ({
      token: t.token,
      logprob: t.logprob,
      bytes: t.bytes,
      top_logprobs: t.top_logprobs.map((alt) => ({ token: alt.token, logprob: alt.logprob, bytes: alt.bytes })),
      // Our addition: the sampled token id, which RL training needs verbatim.
      token_id: t.id,
    }));
  }

  private choice(index: number): ChoiceState {
    let choice = this.choices.get(index);
    if (!choice) {
      choice = { content: '', reasoning: null, tokens: [], finishReason: null, toolCalls: null, completionTokenIds: [] };
      this.choices.set(index, choice);
    }
    return choice;
  }
}

interface ChoiceState {
  content: string;
  /** The reasoning before the answer; null for a model that does not reason. */
  reasoning: string | null;
  tokens: TokenInfo[];
  finishReason: string | null;
  toolCalls: ToolCallOutput[] | null;
  completionTokenIds: number[];
}
