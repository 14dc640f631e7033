import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import * as vm from 'node:vm';

/**
 * Loading @mlc-ai/web-xgrammar (XGrammar compiled to wasm) in Node.
 *
 * Its package says ESM but lib/index.js is a UMD bundle that calls `require`, reads
 * `__filename` and does `await import('module')` when its wasm starts. Neither a plain
 * `import()` (jest's module registry cannot run that inner import) nor the globalThis
 * workaround works in every host we run in, so the bundle is evaluated here the way Node
 * evaluates a CommonJS file: wrapped in a function that receives `exports`, `require`,
 * `__filename`, `__dirname`, run in the main context whose default loader serves the inner
 * import. No globals are touched.
 *
 * Calling the wrapper again gives an independent copy with its own wasm instance. That
 * matters: xgrammar reports an invalid schema by aborting the wasm, which leaves that
 * instance's stack unwound badly (after about a dozen aborts it crashes on valid input), so
 * schemas are first tried in a disposable copy (see SchemaProbe). The wrapper also receives
 * its own `console`, which is how the abort's reason ("[FATAL] ...: Unsupported type") is
 * captured for the error message.
 */

/** The part of xgrammar's API the engine uses (its own .d.ts has private constructors). */
export interface Xgrammar {
  TokenizerInfo: {
    createTokenizerInfo(
      encodedVocab: string[],
      vocabType: string,
      prependSpaceInTokenization: boolean,
      vocabSize: number,
      stopTokenIds: number[],
    ): Promise<XgTokenizerInfo>;
  };
  GrammarCompiler: { createGrammarCompiler(info: XgTokenizerInfo, cacheEnabled?: boolean): Promise<XgGrammarCompiler> };
  GrammarMatcher: { createGrammarMatcher(compiled: XgCompiledGrammar): Promise<XgGrammarMatcher> };
  Grammar: {
    fromJSONSchema(schema: string, anyWhitespace: boolean, indent: number, separators: undefined, strictMode: boolean): Promise<XgGrammar>;
  };
}

export interface XgGrammar {
  /** The grammar in xgrammar's EBNF. */
  toString(): string;
  dispose(): void;
}

export interface XgTokenizerInfo {
  dispose(): void;
}

export interface XgGrammarCompiler {
  compileJSONSchema(schema: string, anyWhitespace: boolean, indent: number, separators: undefined, strictMode: boolean): Promise<XgCompiledGrammar>;
  /** A grammar in xgrammar's EBNF, rooted at `root`. */
  compileGrammar(ebnf: string): Promise<XgCompiledGrammar>;
  /** A structural tag (lib/structural_tag.d.ts): free text, tags with grammars inside, triggers. */
  compileStructuralTag(structuralTag: { type: 'structural_tag'; format: Record<string, unknown> }): Promise<XgCompiledGrammar>;
  dispose(): void;
}

export interface XgCompiledGrammar {
  dispose(): void;
}

export interface XgGrammarMatcher {
  acceptToken(tokenId: number): boolean;
  isTerminated(): boolean;
  /** The text the grammar forces from here (empty when the next byte is a choice). */
  findJumpForwardString(): string;
  rollBack(numTokens: number): void;
  dispose(): void;
}

/** An embind std::vector<int32_t>. */
interface VectorInt {
  size(): number;
  get(i: number): number;
  delete(): void;
}

/**
 * The next-token bitmask, synchronously. The public getNextTokenBitmask() is async only to
 * await the wasm start (long done once a matcher exists), but masking runs inside
 * sampleToken's synchronous logits processor, so this calls the binding it wraps.
 */
export function nextTokenBitmask(matcher: XgGrammarMatcher, vocabSize: number): Int32Array {
  const handle = (matcher as unknown as { handle: { GetNextTokenBitmask(n: number): VectorInt } }).handle;
  const vector = handle.GetNextTokenBitmask(vocabSize);
  try {
    const words = new Int32Array(vector.size());
    for (let i = 0; i < words.length; i++) words[i] = vector.get(i);
    return words;
  } finally {
    vector.delete();
  }
}

/**
 * Makes matchers synchronously, as a sequence joining a decode batch needs. The public
 * createGrammarMatcher() is async only to await the wasm start; with one matcher made that
 * way in hand, its wrapper class and binding constructor make the rest (same arguments as
 * createGrammarMatcher's defaults: the tokenizer's stop tokens, no rollback limit).
 */
export function matcherFactory(sample: XgGrammarMatcher): (compiled: XgCompiledGrammar) => XgGrammarMatcher {
  const Wrapper = sample.constructor as new (handle: unknown, vocabSize: number) => XgGrammarMatcher;
  const { handle, vocab_size } = sample as unknown as { handle: object; vocab_size: number };
  const Binding = handle.constructor as new (compiled: unknown, stopTokens: undefined, terminateWithoutStop: boolean, maxRollback: number) => unknown;
  return (compiled) => new Wrapper(new Binding((compiled as unknown as { handle: unknown }).handle, undefined, false, -1), vocab_size);
}

export interface XgrammarCopy {
  api: Xgrammar;
  /** Lines the wasm wrote to stderr since the last call (its FATAL and WARNING messages). */
  takeErrors(): string[];
}

type BundleWrapper = (
  exports: Record<string, unknown>,
  module: { exports: Record<string, unknown> },
  require: NodeRequire,
  filename: string,
  dirname: string,
  console: Pick<Console, 'log' | 'warn' | 'error' | 'info' | 'debug'>,
) => void;

let wrapper: { run: BundleWrapper; entry: string } | null = null;

/** Compiles the bundle once per process; every call returns a fresh, independent copy. */
export function loadXgrammar(): XgrammarCopy {
  if (!wrapper) {
    const entry = resolveBundle();
    const source = fs.readFileSync(entry, 'utf8');
    const run = vm.runInThisContext(`(function (exports, module, require, __filename, __dirname, console) {${source}\n})`, {
      filename: entry,
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    }) as BundleWrapper;
    wrapper = { run, entry };
  }
  const errors: string[] = [];
  const log = (...args: unknown[]) => {
    errors.push(args.map(String).join(' '));
    if (errors.length > 50) errors.shift(); // warnings of a long-lived copy are not kept
  };
  const module = { exports: {} as Record<string, unknown> };
  wrapper.run(module.exports, module, createRequire(wrapper.entry), wrapper.entry, path.dirname(wrapper.entry), {
    log: () => undefined,
    info: () => undefined,
    debug: () => undefined,
    warn: log,
    error: log,
  });
  return { api: module.exports as unknown as Xgrammar, takeErrors: () => errors.splice(0) };
}

/**
 * The bundle's path: from this file when it runs from source, from the working directory
 * when a bundler has replaced __filename.
 */
function resolveBundle(): string {
  for (const from of [__filename, path.join(process.cwd(), 'index.js')]) {
    try {
      return createRequire(from).resolve('@mlc-ai/web-xgrammar');
    } catch {
      // try the next base
    }
  }
  throw new Error('@mlc-ai/web-xgrammar is not installed');
}

/** True for the error a wasm abort throws (it comes from the main context, so no instanceof). */
export function isWasmAbort(err: unknown): boolean {
  return typeof (err as { message?: unknown })?.message === 'string' && /Aborted\(/.test((err as Error).message);
}
