import { ToolCallScanner } from '../tools/tool-call-scanner';
import type { ToolCallSyntax } from '../tools/tool-call-syntax';
import type { ClosingLexer } from './json-matcher';

/**
 * The closing walk's view of a reply with tool calls: inside a call's arguments it prefers
 * what the JSON lexer prefers; the markup around them is forced text, which the walk takes
 * from the grammar itself, and free text needs no closing.
 */
export class ToolCallLexer implements ClosingLexer {
  private readonly scanner: ToolCallScanner;

  constructor(syntaxOrScanner: ToolCallSyntax | ToolCallScanner) {
    this.scanner = syntaxOrScanner instanceof ToolCallScanner ? syntaxOrScanner : new ToolCallScanner(syntaxOrScanner);
  }

  clone(): ToolCallLexer {
    return new ToolCallLexer(this.scanner.clone());
  }

  feed(byte: number): void {
    this.scanner.feed(byte);
  }

  feedAll(bytes: Uint8Array): void {
    for (const byte of bytes) this.scanner.feed(byte);
  }

  closingPreferences(): number[] {
    return this.scanner.state === 'arguments' ? this.scanner.argumentsLexer.closingPreferences() : [];
  }
}
