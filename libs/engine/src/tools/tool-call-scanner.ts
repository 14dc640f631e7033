import { JsonLexer } from '../grammar/json-lexer';
import type { ToolCallSyntax } from './tool-call-syntax';

/**
 * Where a reply stands against a tool-call syntax, one character (or byte) at a time:
 * - `text`: free text, watching for the trigger;
 * - `opening`: inside a call's opening (`<tool_call>\n{"name": "f", "arguments": `);
 * - `arguments`: inside the arguments object, followed by a JSON lexer;
 * - `closing`: the syntax's end (`}\n</tool_call>`).
 * It does not validate (the grammar does); it only tells what each character is, which both
 * the streaming parser and the grammar's closing walk need. Only ASCII matters to it, so it
 * reads UTF-16 code units and UTF-8 bytes alike.
 */
export type ScanState = 'text' | 'opening' | 'arguments' | 'closing';

export class ToolCallScanner {
  state: ScanState = 'text';
  /** The opening read so far (state `opening`). */
  private opening = '';
  /** The last characters of free text, as long as the trigger at most. */
  private tail = '';
  private json = new JsonLexer();
  private closingLeft = 0;
  private readonly openingEnd: string;

  constructor(readonly syntax: ToolCallSyntax) {
    this.openingEnd = `", "${syntax.argumentsKey}": `;
  }

  clone(): ToolCallScanner {
    const copy = new ToolCallScanner(this.syntax);
    copy.state = this.state;
    copy.opening = this.opening;
    copy.tail = this.tail;
    copy.json = this.json.clone();
    copy.closingLeft = this.closingLeft;
    return copy;
  }

  /** The lexer of the arguments object (state `arguments`). */
  get argumentsLexer(): JsonLexer {
    return this.json;
  }

  /**
   * How many of the last characters of free text could be the start of the trigger: text
   * that may turn out to be markup.
   */
  get partialTrigger(): number {
    const { trigger } = this.syntax;
    for (let n = Math.min(trigger.length - 1, this.tail.length); n > 0; n--) {
      if (this.tail.endsWith(trigger.slice(0, n))) return n;
    }
    return 0;
  }

  /** The function name, once the opening is complete (state `arguments` onwards). */
  get name(): string {
    const quoted = /"name": ("(?:[^"\\]|\\.)*")/.exec(this.opening)?.[1];
    return quoted ? (JSON.parse(quoted) as string) : '';
  }

  feed(code: number): void {
    const ch = String.fromCharCode(code);
    switch (this.state) {
      case 'text':
        this.tail = (this.tail + ch).slice(-this.syntax.trigger.length);
        if (this.tail === this.syntax.trigger) {
          this.state = 'opening';
          this.opening = this.tail;
          this.tail = '';
        }
        return;
      case 'opening':
        this.opening += ch;
        if (this.opening.endsWith(this.openingEnd)) {
          this.state = 'arguments';
          this.json = new JsonLexer();
        }
        return;
      case 'arguments':
        this.json.feed(code);
        if (this.json.complete) {
          this.state = 'closing';
          this.closingLeft = this.syntax.end.length;
        }
        return;
      case 'closing':
        if (--this.closingLeft === 0) this.state = 'text';
        return;
    }
  }
}
