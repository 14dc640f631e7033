import { Template } from '@huggingface/jinja';
import { callOpening, toolCallSyntax } from './tools/tool-call-syntax';

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
 * @huggingface/jinja with the variables transformers passes to it. A template with no tool
 * syntax of its own (Gemma 3's) gets the tools, calls and results as text in the hermes
 * syntax the tool grammar then decodes (withToolsAsText).
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
    if (!this.supportsTools) return this.renderWith(withToolsAsText(messages, tools), undefined, options);
    return this.renderWith(messages, tools, options);
  }

  private renderWith(messages: ChatMessage[], tools: ToolDefinition[] | undefined, options: RenderOptions): string {
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

const HERMES = toolCallSyntax('hermes');

/** How withToolsAsText describes the tools, around one JSON signature a line. */
const TOOLS_PREAMBLE =
  '# Tools\n\nYou may call one or more functions to help with the request. Their signatures are inside <tools></tools>:\n<tools>\n';
const TOOLS_POSTAMBLE =
  '\n</tools>\n\nTo call a function, answer with a JSON object {"name": <function-name>, "arguments": <args-json-object>} inside <tool_call></tool_call> tags.';

/**
 * Messages for a template that cannot render tools, calls or their results: the tools are
 * described at the end of the system message (one is added if there is none), an assistant
 * turn's calls become `<tool_call>` blocks after its text, and a run of tool results one user
 * turn of `<tool_response>` blocks, so that user and assistant turns still alternate (Gemma's
 * template requires it). The calls are written exactly as the hermes grammar makes the model
 * write them.
 */
function withToolsAsText(messages: ChatMessage[], tools: ToolDefinition[] | undefined): ChatMessage[] {
  const out: ChatMessage[] = [];
  let resultsTurn: ChatMessage | null = null;
  for (const m of messages) {
    if (m.role === 'tool') {
      const block = `<tool_response>\n${m.content ?? ''}\n</tool_response>`;
      if (resultsTurn) resultsTurn.content += `\n${block}`;
      else out.push((resultsTurn = { role: 'user', content: block }));
      continue;
    }
    resultsTurn = null;
    if (m.role === 'assistant' && m.tool_calls?.length) {
      const calls = m.tool_calls.map((c) => `${callOpening(HERMES, c.function.name)}${JSON.stringify(parseArguments(c.function.arguments))}${HERMES.end}`);
      const text: ChatMessage = { ...m, content: [m.content, ...calls].filter((part) => part).join('\n') };
      delete text.tool_calls;
      out.push(text);
    } else out.push(m);
  }
  if (!tools) return out;
  const description = TOOLS_PREAMBLE + tools.map((tool) => JSON.stringify(tool)).join('\n') + TOOLS_POSTAMBLE;
  if (out[0]?.role === 'system') return [{ ...out[0], content: `${out[0].content ?? ''}\n\n${description}` }, ...out.slice(1)];
  return [{ role: 'system', content: description }, ...out];
}

function parseArguments(args: string | Record<string, unknown>): unknown {
  if (typeof args !== 'string') return args;
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}
