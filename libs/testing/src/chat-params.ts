import type { ChatCompletionParams } from '@trainyard/contracts';

/** A chat completion's params as the gateway normalises a plain request (one user turn, text), with `overrides`. */
export function chatCompletionParams(overrides: Partial<ChatCompletionParams> = {}): ChatCompletionParams {
  return {
    model: 'trainyard/tiny',
    messages: [{ role: 'user', content: 'hi' }],
    temperature: 1,
    top_p: 1,
    max_tokens: 16,
    n: 1,
    stop: [],
    seed: null,
    logprobs: false,
    top_logprobs: 0,
    response_format: { type: 'text' },
    tools: null,
    tool_choice: 'auto',
    parallel_tool_calls: true,
    return_token_ids: false,
    chat_template_kwargs: null,
    ...overrides,
  };
}
