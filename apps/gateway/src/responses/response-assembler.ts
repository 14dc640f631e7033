import type { InferenceEvent, StartCompletionReply, TokenInfo, ToolCallOutput } from '@trainyard/contracts';
import { newId } from './response-items';

/** What a response repeats of its request, as the Responses API does. */
export interface ResponseEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  temperature: number;
  top_p: number;
  text: { format: Record<string, unknown> };
  tools: Record<string, unknown>[];
  tool_choice: unknown;
  parallel_tool_calls: boolean;
  user: string | null;
  store: boolean;
  previous_response_id: string | null;
  conversation: { id: string } | null;
  metadata: Record<string, string>;
  top_logprobs: number | null;
}

/** A token of output text with its logprob and alternatives, as output_text parts carry them. */
interface OutputLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

interface OutputText {
  type: 'output_text';
  text: string;
  annotations: never[];
  /** Empty unless `include` asked for them. */
  logprobs: OutputLogprob[];
}

interface MessageItem {
  id: string;
  type: 'message';
  role: 'assistant';
  status: ItemStatus;
  content: OutputText[];
}

interface FunctionCallItem {
  id: string;
  type: 'function_call';
  status: ItemStatus;
  call_id: string;
  name: string;
  arguments: string;
}

/** A reasoning model's reasoning before its answer, as text (the model's own, not a summary). */
interface ReasoningItem {
  id: string;
  type: 'reasoning';
  status: ItemStatus;
  summary: never[];
  content: { type: 'reasoning_text'; text: string }[];
}

type ItemStatus = 'in_progress' | 'completed' | 'incomplete';
type OutputItem = ReasoningItem | MessageItem | FunctionCallItem;
export type ResponseStreamEvent = { type: string; sequence_number: number } & Record<string, unknown>;

/**
 * Folds a completion's InferenceEvents into the Responses API's shapes: the whole `response`
 * object, or the `response.*` stream events in their documented order. Output items appear
 * in the order their first text or call fragment does: a reasoning model's reasoning item,
 * a message with one output_text part, then function calls. Text is streamed as it comes (the worker sends a call's markup as
 * neither text nor arguments); a call's arguments stream from the worker's tool-call
 * fragments, and the finish event's tool calls are the final word on every call. When the
 * worker reports logprobs (`include: ["message.output_text.logprobs"]`), the tokens of the text
 * go with it: on each text delta event and on the output_text part. Pure: no I/O, so every
 * shape decision is unit-tested here.
 */
export class ResponseAssembler {
  readonly createdAt = Math.floor(Date.now() / 1000);
  private sequence = 0;
  private readonly items: OutputItem[] = [];
  /** The message item text goes to, while it is open. */
  private message: MessageItem | null = null;
  /** The reasoning item reasoning text goes to, while it is open. */
  private reasoning: ReasoningItem | null = null;
  /** Function call items by the worker's tool-call index. */
  private readonly calls = new Map<number, FunctionCallItem>();
  /** All text sent so far, over every message item. */
  private text = '';
  private finishReason: 'stop' | 'length' | 'tool_calls' | null = null;
  private usage: Record<string, unknown> | null = null;

  constructor(
    readonly id: string,
    private readonly started: StartCompletionReply,
    private readonly echo: ResponseEcho,
  ) {}

  get done(): boolean {
    return this.usage !== null;
  }

  /** Applies one event; returns the stream events it produces (possibly none). */
  apply(event: InferenceEvent): ResponseStreamEvent[] {
    switch (event.type) {
      case 'prompt':
        return [this.event('response.created', { response: this.response() }), this.event('response.in_progress', { response: this.response() })];
      case 'delta': {
        if (event.reasoning) return this.addReasoning(event.reasoning);
        // A call's tokens are not text: their logprobs have no output_text to go on.
        const out = event.text ? this.addText(event.text, event.tool_call ? [] : event.tokens) : [];
        // Tokens without text (bytes of a character not yet whole, the end token) belong to the text they end, if any, as an empty delta.
        if (!event.text && !event.tool_call && this.message && event.tokens.length > 0 && this.started.logprobs) out.push(...this.addText('', event.tokens));
        if (event.tool_call) out.push(...this.addCallFragment(event.tool_call));
        return out;
      }
      case 'finish': {
        this.finishReason = event.finish_reason;
        const out: ResponseStreamEvent[] = [];
        // What of the final reasoning has not been sent, then the reasoning item's end.
        const sent = this.reasoning?.content[0].text ?? '';
        const reasoning = event.reasoning_content ?? '';
        if (reasoning.length > sent.length && reasoning.startsWith(sent)) out.push(...this.addReasoning(reasoning.slice(sent.length)));
        out.push(...this.closeReasoning());
        const content = event.content ?? '';
        // What of the final text has not been sent (none, when every delta arrived).
        if (content.length > this.text.length && content.startsWith(this.text)) out.push(...this.addText(content.slice(this.text.length)));
        // A response without calls always has its message, empty or not.
        if (!event.tool_calls?.length && this.items.every((item) => item.type === 'reasoning')) out.push(...this.openMessage());
        out.push(...this.closeMessage());
        for (const [index, call] of (event.tool_calls ?? []).entries()) out.push(...this.finishCall(index, call));
        return out;
      }
      case 'done': {
        const { prompt_tokens, completion_tokens, cached_tokens } = event.usage;
        this.usage = {
          input_tokens: prompt_tokens,
          input_tokens_details: { cached_tokens: cached_tokens ?? 0 },
          output_tokens: completion_tokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: prompt_tokens + completion_tokens,
        };
        return [this.event(this.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: this.response() })];
      }
      case 'accepted':
      case 'error':
        return [];
    }
  }

  /** The `response` object as it stands: in progress until the worker's last event. */
  response(): Record<string, unknown> {
    const status = this.status;
    return {
      id: this.id,
      object: 'response',
      created_at: this.createdAt,
      status,
      error: null,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      instructions: this.echo.instructions,
      max_output_tokens: this.echo.max_output_tokens,
      model: this.started.model,
      output: structuredClone(this.items),
      parallel_tool_calls: this.echo.parallel_tool_calls,
      previous_response_id: this.echo.previous_response_id,
      conversation: this.echo.conversation,
      reasoning: null,
      store: this.echo.store,
      temperature: this.echo.temperature,
      text: this.echo.text,
      tool_choice: this.echo.tool_choice,
      tools: this.echo.tools,
      top_p: this.echo.top_p,
      top_logprobs: this.echo.top_logprobs,
      truncation: 'disabled',
      usage: this.usage,
      user: this.echo.user,
      metadata: this.echo.metadata,
      // Our addition, as in chat completions: which weights served this (null for a base model).
      checkpoint_step: this.started.checkpoint_step,
    };
  }

  /** An error event, for a failure once the stream is open (its status line already sent). */
  errorEvent(error: { message: string; code: string; param: string | null }): ResponseStreamEvent {
    return this.event('error', { code: error.code, message: error.message, param: error.param });
  }

  private get status(): ItemStatus {
    if (!this.done) return 'in_progress';
    return this.finishReason === 'length' ? 'incomplete' : 'completed';
  }

  private addReasoning(text: string): ResponseStreamEvent[] {
    const out: ResponseStreamEvent[] = [];
    if (!this.reasoning) {
      this.reasoning = { id: newId('rs'), type: 'reasoning', status: 'in_progress', summary: [], content: [] };
      out.push(this.addItem(this.reasoning));
      this.reasoning.content.push({ type: 'reasoning_text', text: '' });
    }
    const item = this.reasoning;
    item.content[0].text += text;
    out.push(this.event('response.reasoning_text.delta', { item_id: item.id, output_index: this.items.indexOf(item), content_index: 0, delta: text }));
    return out;
  }

  private closeReasoning(): ResponseStreamEvent[] {
    const item = this.reasoning;
    if (!item || item.status !== 'in_progress') return [];
    item.status = 'completed';
    const outputIndex = this.items.indexOf(item);
    return [
      this.event('response.reasoning_text.done', { item_id: item.id, output_index: outputIndex, content_index: 0, text: item.content[0].text }),
      this.event('response.output_item.done', { output_index: outputIndex, item: structuredClone(item) }),
    ];
  }

  private addText(text: string, tokens: TokenInfo[] = []): ResponseStreamEvent[] {
    const out = this.closeReasoning();
    if (!this.message) out.push(...this.openMessage());
    const message = this.message as MessageItem;
    const logprobs = this.started.logprobs ? tokens.map(outputLogprob) : [];
    message.content[0].text += text;
    message.content[0].logprobs.push(...logprobs);
    this.text += text;
    out.push(this.event('response.output_text.delta', { ...this.partPlace(message), delta: text, logprobs: logprobs.map(eventLogprob) }));
    return out;
  }

  private openMessage(): ResponseStreamEvent[] {
    const message: MessageItem = { id: newId('msg'), type: 'message', role: 'assistant', status: 'in_progress', content: [] };
    this.message = message;
    const added = this.addItem(message);
    message.content.push({ type: 'output_text', text: '', annotations: [], logprobs: [] });
    return [added, this.event('response.content_part.added', { ...this.partPlace(message), part: structuredClone(message.content[0]) })];
  }

  private closeMessage(): ResponseStreamEvent[] {
    const message = this.message;
    if (!message) return [];
    this.message = null;
    message.status = this.finishReason === 'length' ? 'incomplete' : 'completed';
    const part = message.content[0];
    return [
      this.event('response.output_text.done', { ...this.partPlace(message), text: part.text, logprobs: part.logprobs.map(eventLogprob) }),
      this.event('response.content_part.done', { ...this.partPlace(message), part: structuredClone(part) }),
      this.event('response.output_item.done', { output_index: this.items.indexOf(message), item: structuredClone(message) }),
    ];
  }

  private addCallFragment(fragment: { index: number; id?: string; name?: string; arguments: string }): ResponseStreamEvent[] {
    let call = this.calls.get(fragment.index);
    const out: ResponseStreamEvent[] = [];
    if (!call) {
      out.push(...this.closeReasoning(), ...this.closeMessage());
      call = { id: newId('fc'), type: 'function_call', status: 'in_progress', call_id: fragment.id ?? newId('call'), name: fragment.name ?? '', arguments: '' };
      this.calls.set(fragment.index, call);
      out.push(this.addItem(call));
    }
    if (fragment.arguments) out.push(...this.addArguments(call, fragment.arguments));
    return out;
  }

  private finishCall(index: number, final: ToolCallOutput): ResponseStreamEvent[] {
    const out: ResponseStreamEvent[] = [];
    let call = this.calls.get(index);
    if (!call) {
      call = { id: newId('fc'), type: 'function_call', status: 'in_progress', call_id: final.id, name: final.function.name, arguments: '' };
      this.calls.set(index, call);
      out.push(this.addItem(call));
    }
    const args = final.function.arguments;
    if (args.length > call.arguments.length && args.startsWith(call.arguments)) out.push(...this.addArguments(call, args.slice(call.arguments.length)));
    call.arguments = args;
    call.name = final.function.name;
    call.status = 'completed';
    const outputIndex = this.items.indexOf(call);
    out.push(
      this.event('response.function_call_arguments.done', { item_id: call.id, output_index: outputIndex, name: call.name, arguments: args }),
      this.event('response.output_item.done', { output_index: outputIndex, item: structuredClone(call) }),
    );
    return out;
  }

  private addArguments(call: FunctionCallItem, delta: string): ResponseStreamEvent[] {
    call.arguments += delta;
    return [this.event('response.function_call_arguments.delta', { item_id: call.id, output_index: this.items.indexOf(call), delta })];
  }

  private addItem(item: OutputItem): ResponseStreamEvent {
    this.items.push(item);
    return this.event('response.output_item.added', { output_index: this.items.length - 1, item: structuredClone(item) });
  }

  private partPlace(message: MessageItem) {
    return { item_id: message.id, output_index: this.items.indexOf(message), content_index: 0 };
  }

  private event(type: string, fields: Record<string, unknown>): ResponseStreamEvent {
    return { type, sequence_number: this.sequence++, ...fields };
  }
}

function outputLogprob(token: TokenInfo): OutputLogprob {
  return {
    token: token.token,
    logprob: token.logprob,
    bytes: token.bytes,
    top_logprobs: token.top_logprobs.map((alt) => ({ token: alt.token, logprob: alt.logprob, bytes: alt.bytes })),
  };
}

/** The text events' form of a logprob: OpenAI's, without bytes. */
function eventLogprob({ token, logprob, top_logprobs }: OutputLogprob) {
  return { token, logprob, top_logprobs: top_logprobs.map((alt) => ({ token: alt.token, logprob: alt.logprob })) };
}
