/**
 * A kept trajectory as the console shows it: its messages_and_choices turned into turns. A
 * Choice (what RL trains on) is recognised by its `message` key, as the ART client does.
 */
export interface Turn {
  role: string;
  /** The text, content parts joined. */
  text: string;
  toolCalls: { id: string | null; name: string; arguments: string }[];
  /** A tool result answers this call id. */
  toolCallId: string | null;
  /** True for a Choice: a sampled completion, with its logprobs. */
  choice: boolean;
  finishReason: string | null;
  logprobs: { token: string; logprob: number }[];
}

export function turnsOf(trajectory: Record<string, unknown>): Turn[] {
  const items = trajectory['messages_and_choices'];
  if (!Array.isArray(items)) return [];
  return items.filter(isObject).map((item) => {
    const choice = isObject(item['message']);
    const message = choice ? (item['message'] as Record<string, unknown>) : item;
    const logprobs = choice && isObject(item['logprobs']) && Array.isArray(item['logprobs']['content']) ? item['logprobs']['content'] : [];
    return {
      role: typeof message['role'] === 'string' ? message['role'] : choice ? 'assistant' : 'unknown',
      text: textOf(message['content']),
      toolCalls: (Array.isArray(message['tool_calls']) ? message['tool_calls'] : []).filter(isObject).map((call) => {
        const fn = isObject(call['function']) ? call['function'] : {};
        return {
          id: typeof call['id'] === 'string' ? call['id'] : null,
          name: typeof fn['name'] === 'string' ? fn['name'] : '?',
          arguments: typeof fn['arguments'] === 'string' ? fn['arguments'] : JSON.stringify(fn['arguments'] ?? null),
        };
      }),
      toolCallId: typeof message['tool_call_id'] === 'string' ? message['tool_call_id'] : null,
      choice,
      finishReason: choice && typeof item['finish_reason'] === 'string' ? item['finish_reason'] : null,
      logprobs: logprobs.filter(isObject).flatMap((t) => (typeof t['token'] === 'string' && typeof t['logprob'] === 'number' ? [{ token: t['token'], logprob: t['logprob'] }] : [])),
    };
  });
}

/** The trajectory's own metrics (numbers and booleans), as POST .../log averages them. */
export function metricsOf(trajectory: Record<string, unknown>): Record<string, number> {
  const metrics = trajectory['metrics'];
  if (!isObject(metrics)) return {};
  return Object.fromEntries(
    Object.entries(metrics).flatMap(([k, v]) => (typeof v === 'number' ? [[k, v]] : typeof v === 'boolean' ? [[k, Number(v)]] : [])),
  );
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (isObject(part) && typeof part['text'] === 'string' ? part['text'] : '')).join('');
  return '';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
