import { NumberRanges } from './number-ranges';
import { XgrammarCopy, isWasmAbort, loadXgrammar } from './xgrammar-loader';

/**
 * How JSON is written: one line, the separators ", " and ": " and no other whitespace outside
 * strings. Free whitespace is where constrained models loop (newline after newline until
 * max_tokens), and the fixed form costs nothing to JSON.parse.
 */
export const ANY_WHITESPACE = false;
export const ONE_LINE = -1;

/**
 * Tries a JSON schema in a disposable copy of xgrammar before the real compiler sees it.
 * xgrammar rejects a schema by aborting its wasm, and an aborted instance is not safe to use
 * again (see xgrammar-loader), so the copy that aborted is dropped and the next check loads a
 * fresh one. The abort's "[FATAL] file:line: reason" line becomes the error message.
 */
export class SchemaProbe {
  private copy: XgrammarCopy | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  /** Resolves when the schema converts to a grammar; rejects with the reason otherwise. */
  check(schema: string, strict: boolean, anyWhitespace: boolean, indent: number): Promise<void> {
    // One at a time, so each failure reads its own lines of stderr.
    const run = this.queue.then(() => this.tryConvert(schema, strict, anyWhitespace, indent));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async tryConvert(schema: string, strict: boolean, anyWhitespace: boolean, indent: number): Promise<void> {
    // Numeric ranges are written by number-ranges, which refuses a range that holds no value.
    const { schema: withoutRanges } = NumberRanges.of(schema);
    const copy = (this.copy ??= loadXgrammar());
    copy.takeErrors();
    try {
      const grammar = await copy.api.Grammar.fromJSONSchema(withoutRanges, anyWhitespace, indent, undefined, strict);
      grammar.dispose();
    } catch (err) {
      if (isWasmAbort(err)) this.copy = null;
      throw new Error(fatalReason(copy.takeErrors()) ?? String((err as Error)?.message ?? err));
    }
  }
}

/** "[FATAL] /path/json_schema_converter.cc:902: Unsupported type \"foo\"" -> "Unsupported type \"foo\"". */
function fatalReason(lines: string[]): string | null {
  const fatal = lines.find((line) => line.includes('[FATAL]'));
  if (!fatal) return null;
  return fatal.replace(/^.*\[FATAL\]\s*(\S+:\d+:\s*)?/, '').replace(/^Check failed: \(.*?\) is false:\s*/, '').trim();
}
