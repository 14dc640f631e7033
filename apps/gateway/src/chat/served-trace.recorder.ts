import type { ChatCompletionParams, InferenceEvent, ServedChoice, ServedToken, ServedTrace, StartCompletionReply } from '@trainyard/contracts';

/**
 * What a stored completion or response was served, read off the worker's events as they pass:
 * the prompt's token ids and each choice's message, sampled token ids and their logprobs.
 * The training export reads it back (the answer the client saw may not show the tokens).
 */
export class ServedTraceRecorder {
  private promptTokenIds: number[] = [];
  private readonly tokens = new Map<number, ServedToken[]>();
  private readonly choices = new Map<number, ServedChoice>();

  constructor(
    private readonly started: StartCompletionReply,
    private readonly params: Pick<ChatCompletionParams, 'messages' | 'tools'>,
  ) {}

  observe(event: InferenceEvent): void {
    switch (event.type) {
      case 'prompt':
        this.promptTokenIds = event.prompt_token_ids;
        return;
      case 'delta': {
        let tokens = this.tokens.get(event.index);
        if (!tokens) this.tokens.set(event.index, (tokens = []));
        for (const t of event.tokens) tokens.push({ token_id: t.id, token: t.token, logprob: t.logprob });
        return;
      }
      case 'finish': {
        const tokens = this.tokens.get(event.index) ?? [];
        // The logprobs go with the ids only when there is one per sampled token, in order.
        const aligned = tokens.length === event.completion_token_ids.length && tokens.every((t, i) => t.token_id === event.completion_token_ids[i]);
        this.choices.set(event.index, {
          index: event.index,
          message: {
            role: 'assistant',
            content: event.tool_calls && !event.content ? null : (event.content ?? ''),
            ...(event.tool_calls ? { tool_calls: event.tool_calls } : {}),
            ...(event.reasoning_content ? { reasoning_content: event.reasoning_content } : {}),
          },
          finish_reason: event.finish_reason,
          token_ids: event.completion_token_ids,
          logprobs: aligned && tokens.length > 0 ? tokens : null,
        });
        return;
      }
      default:
        return;
    }
  }

  trace(): ServedTrace {
    return {
      base_model: this.started.base_model,
      model_id: this.started.model_id,
      checkpoint_step: this.started.checkpoint_step,
      messages: this.params.messages,
      tools: this.params.tools,
      prompt_token_ids: this.promptTokenIds,
      choices: [...this.choices.values()].sort((a, b) => a.index - b.index),
    };
  }
}

/** The events, unchanged, each shown to `recorder` on its way. */
export async function* recorded(events: AsyncIterable<InferenceEvent>, recorder: ServedTraceRecorder): AsyncGenerator<InferenceEvent> {
  for await (const event of events) {
    recorder.observe(event);
    yield event;
  }
}
