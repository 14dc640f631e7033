import { Template } from '@huggingface/jinja';

export interface ToolCall {
  id?: string;
  type?: 'function';
  function: { name: string; arguments: string | Record<string, unknown> };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | string;
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  /** An earlier assistant turn's reasoning, which templates of reasoning models (Qwen3) may render. */
  reasoning_content?: string;
}

/** An OpenAI-style tool definition: { type: 'function', function: { name, description, parameters } }. */
export type ToolDefinition = object;

export interface RenderOptions {
  tools?: ToolDefinition[];
  addGenerationPrompt?: boolean;
  /** Extra template variables some families read (e.g. enable_thinking, date_string): a request's chat_template_kwargs. */
  extra?: Record<string, unknown>;
}

/**
 * The model's own chat template (tokenizer_config.json chat_template) rendered by
 * @huggingface/jinja with the variables transformers passes to it.
 */
export class ChatTemplate {
  private readonly templates: Map<string, Template>;
  private readonly sources: string[];

  constructor(
    chatTemplate: string | { name: string; template: string }[],
    private readonly specialTokens: { bos_token?: string | null; eos_token?: string | null } = {},
  ) {
    const named = typeof chatTemplate === 'string' ? [{ name: 'default', template: chatTemplate }] : chatTemplate;
    this.templates = new Map(named.map((t) => [t.name, new Template(t.template)]));
    this.sources = named.map((t) => t.template);
    if (!this.templates.has('default')) throw new Error('chat_template has no default template');
  }

  /** The template text (all named templates), e.g. to tell which tool-call format it uses. */
  get source(): string {
    return this.sources.join('\n');
  }

  /** True when the template reads the `tools` variable, i.e. can describe tools to the model. */
  get supportsTools(): boolean {
    return this.templates.has('tool_use') || this.sources.some((s) => /\btools\b/.test(s));
  }

  render(messages: ChatMessage[], options: RenderOptions = {}): string {
    const tools = options.tools && options.tools.length > 0 ? options.tools : undefined;
    const template = (tools && this.templates.get('tool_use')) || (this.templates.get('default') as Template);
    // Templates index tool_call.function.arguments as a mapping (| tojson); OpenAI sends a JSON string.
    // An assistant turn of calls alone has null content, which templates that search the content
    // (Qwen3's `'</think>' in message.content`) cannot take: it is the empty string for them.
    const normalized = messages.map((m) =>
      m.tool_calls
        ? { ...m, content: m.content ?? '', tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: parseArguments(c.function.arguments) } })) }
        : m,
    );
    // Extra variables come first: a client's chat_template_kwargs never replace the messages or tools.
    return template.render({
      ...options.extra,
      messages: normalized,
      tools,
      add_generation_prompt: options.addGenerationPrompt ?? true,
      bos_token: this.specialTokens.bos_token ?? '',
      eos_token: this.specialTokens.eos_token ?? '',
    });
  }
}

function parseArguments(args: string | Record<string, unknown>): unknown {
  if (typeof args !== 'string') return args;
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}
