import { randomBytes } from 'node:crypto';
import { ToolCallScanner } from './tool-call-scanner';
import type { ToolCallSyntax } from './tool-call-syntax';

export interface ParsedToolCall {
  id: string;
  type: 'function';
  /** arguments as a JSON string, as OpenAI returns them. */
  function: { name: string; arguments: string };
}

/** One piece of a streamed reply: message text, the start of a call, or a fragment of its arguments. */
export type ReplyPart =
  | { kind: 'text'; text: string }
  | { kind: 'call'; index: number; id: string; name: string }
  | { kind: 'arguments'; index: number; text: string };

/** `call_` and 24 random letters and digits, the shape of OpenAI's ids. */
export function newToolCallId(): string {
  return `call_${randomBytes(18).toString('base64url').replace(/[-_]/g, '0').slice(0, 24)}`;
}

/**
 * Splits a reply, as it is generated, into message text and tool calls in a known syntax
 * (the grammar that generated it guarantees the shape). Text that could still be the start
 * of a call, and whitespace that would only separate calls, is held back until the next
 * characters tell; a reply without calls comes out exactly as it was generated.
 */
export class ToolCallStream {
  private readonly scanner: ToolCallScanner;
  private readonly calls: ParsedToolCall[] = [];
  private content = '';
  /** Free text not passed on yet: trailing whitespace, or what may begin the trigger. */
  private held = '';

  constructor(syntax: ToolCallSyntax) {
    this.scanner = new ToolCallScanner(syntax);
  }

  /** Reads newly generated text; returns the parts it completes. */
  push(text: string): ReplyPart[] {
    const parts: ReplyPart[] = [];
    for (let i = 0; i < text.length; i++) {
      const before = this.scanner.state;
      this.scanner.feed(text.charCodeAt(i));
      const after = this.scanner.state;
      if (before === 'text' && after === 'text') this.held += text[i];
      else if (before === 'text') this.held = this.held.slice(0, this.held.length - (this.scanner.syntax.trigger.length - 1));
      else if (before === 'opening' && after === 'arguments') this.startCall(parts);
      else if (before === 'arguments') this.addArguments(parts, text[i]);
      // The rest of the opening and the closing are markup.
      if (before === 'text' && after !== 'text') this.releaseHeld(parts, this.held.trimEnd(), true);
    }
    if (this.scanner.state === 'text') {
      // What may begin the trigger, and the whitespace before it.
      const sure = this.held.slice(0, this.held.length - this.scanner.partialTrigger).trimEnd();
      this.releaseHeld(parts, sure, false);
    }
    return merge(parts);
  }

  /** The end of the reply: what was held back is text after all, unless calls were made (then it was separators). */
  end(): ReplyPart[] {
    const parts: ReplyPart[] = [];
    if (this.calls.length === 0) this.releaseHeld(parts, this.held, true);
    this.held = '';
    return parts;
  }

  /** The message as a whole: its text (null when it only calls tools) and its calls, complete ones only. */
  result(): { content: string | null; toolCalls: ParsedToolCall[] } {
    const toolCalls = this.calls.filter((call) => isJsonObject(call.function.arguments));
    return { content: this.content === '' && toolCalls.length > 0 ? null : this.content, toolCalls };
  }

  private releaseHeld(parts: ReplyPart[], text: string, dropRest: boolean): void {
    this.held = dropRest ? '' : this.held.slice(text.length);
    if (text === '') return;
    this.content += text;
    parts.push({ kind: 'text', text });
  }

  private startCall(parts: ReplyPart[]): void {
    const call: ParsedToolCall = { id: newToolCallId(), type: 'function', function: { name: this.scanner.name, arguments: '' } };
    this.calls.push(call);
    parts.push({ kind: 'call', index: this.calls.length - 1, id: call.id, name: call.function.name });
  }

  private addArguments(parts: ReplyPart[], ch: string): void {
    const index = this.calls.length - 1;
    this.calls[index].function.arguments += ch;
    parts.push({ kind: 'arguments', index, text: ch });
  }
}

/** Adjacent parts of the same kind and call become one. */
function merge(parts: ReplyPart[]): ReplyPart[] {
  const merged: ReplyPart[] = [];
  for (const part of parts) {
    const last = merged[merged.length - 1];
    if (last && last.kind === 'text' && part.kind === 'text') last.text += part.text;
    else if (last && last.kind === 'arguments' && part.kind === 'arguments' && last.index === part.index) last.text += part.text;
    else merged.push({ ...part });
  }
  return merged;
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}
