import type { TextTokenizer } from '../tokenizer';
import { callOpening, ToolCallSyntax } from '../tools/tool-call-syntax';
import { ByteVocabulary } from './byte-vocabulary';
import { GrammarMatcher, GrammarTrigger, JsonGrammarMatcher, MatcherOptions, MAX_CLOSING_BYTES } from './json-matcher';
import { withBoundedNumbers } from './number-bounds';
import { NumberRanges } from './number-ranges';
import { ANY_WHITESPACE, ONE_LINE, SchemaProbe } from './schema-probe';
import { ToolCallLexer } from './tool-call-lexer';
import { Xgrammar, XgCompiledGrammar, XgGrammarCompiler, XgGrammarMatcher, loadXgrammar, matcherFactory } from './xgrammar-loader';

/**
 * What a reply must be, as JSON: any JSON object, or a document valid under a JSON schema.
 * `strict` compiles the schema in xgrammar's strict mode: properties and items the schema does
 * not name are not generated (the output is valid against the schema either way).
 */
export type GrammarSpec = { kind: 'any_object' } | { kind: 'schema'; schema: Record<string, unknown>; strict: boolean };

/** Which grammar a budget problem is about: a JSON document (GrammarSpec) or a reply with tool calls. */
export type GrammarKind = 'json' | 'tool_calls';

/**
 * What a GrammarError is about: the GrammarSpec's schema, the parameters schema of the tool at
 * `index` of ToolCallRequest.tools, a function ToolCallRequest.calls names that is not among
 * the tools, or a grammar
 * whose smallest document is too long to promise (the budget errors below).
 */
export type GrammarFault =
  | { kind: 'schema' }
  | { kind: 'tool_parameters'; index: number }
  | { kind: 'unknown_function' }
  | { kind: 'unclosable'; grammar: GrammarKind; maxBytes: number }
  | { kind: 'budget'; grammar: GrammarKind };

/**
 * A grammar that cannot be compiled or honoured: `fault` says which input is at fault, the
 * message why (the caller names the field of its own request).
 */
export class GrammarError extends Error {
  constructor(
    message: string,
    readonly fault: GrammarFault,
  ) {
    super(message);
    this.name = 'GrammarError';
  }
}

/** A token budget too small for even the smallest output the grammar allows. */
export class GrammarBudgetError extends GrammarError {
  constructor(
    readonly minTokens: number,
    readonly maxTokens: number,
    grammar: GrammarKind,
  ) {
    super(`the smallest document needs at least ${minTokens} tokens, but the budget is ${maxTokens}`, { kind: 'budget', grammar });
    this.name = 'GrammarBudgetError';
  }
}

/** A function the model may call: its name and the JSON schema of its arguments object. */
export interface ToolSpec {
  name: string;
  /** Absent: a function without parameters (an empty object). */
  parameters?: Record<string, unknown>;
}

/** What a reply with tools may be. */
export interface ToolCallRequest {
  syntax: ToolCallSyntax;
  tools: ToolSpec[];
  /**
   * `optional`: text, tool calls or both; `required`: one call or more and nothing else;
   * `{ only }`: calls of that function only, one or more.
   */
  calls: 'optional' | 'required' | { only: string };
  /** More than one call in a reply (where the syntax has room for several). */
  parallel: boolean;
}

export interface CompiledGrammar {
  /**
   * A matcher for one sequence that will be given at most maxTokens tokens. Throws
   * GrammarBudgetError when its smallest document needs more: the output could not parse.
   */
  newMatcher(maxTokens: number): GrammarMatcher;
}

/** json_object is "any object": a schema without properties, extra properties allowed. */
const ANY_OBJECT = '{"type": "object"}';
/** A function without parameters takes an empty object. */
const NO_PARAMETERS = { type: 'object', properties: {} };
/** Compiled grammars kept per compiler; the least recently used goes first. */
const CACHE_SIZE = 64;
/** Shared by every compiler: checking a schema does not depend on the vocabulary. */
const schemaProbe = new SchemaProbe();

/**
 * Compiles response formats and tool calls into token-level grammars (XGrammar) for one
 * tokenizer. One per loaded model; it caches compiled grammars by their definition.
 *
 * Tool arguments are compiled in xgrammar's strict mode (see GrammarSpec), whether or not the
 * function says `strict`.
 */
export class JsonGrammarCompiler {
  private readonly cache = new Map<string, Promise<XgCompiledGrammar>>();
  /** Tokens holding a trigger's last byte, per trigger. */
  private readonly triggerTokens = new Map<string, Uint8Array>();

  private constructor(
    private readonly api: Xgrammar,
    private readonly compiler: XgGrammarCompiler,
    private readonly makeMatcher: (grammar: XgCompiledGrammar) => XgGrammarMatcher,
    private readonly vocab: ByteVocabulary,
    private readonly eosTokenIds: number[],
  ) {}

  static async create(tokenizer: TextTokenizer, eosTokenIds: number[]): Promise<JsonGrammarCompiler> {
    if (eosTokenIds.length === 0) throw new Error('a JSON grammar needs an end-of-sequence token');
    const vocab = new ByteVocabulary(tokenizer);
    const { api } = loadXgrammar();
    const info = await api.TokenizerInfo.createTokenizerInfo(vocab.encoded, 'BYTE_LEVEL', false, vocab.size, eosTokenIds);
    const compiler = await api.GrammarCompiler.createGrammarCompiler(info);
    const anyObject = await compiler.compileJSONSchema(ANY_OBJECT, ANY_WHITESPACE, ONE_LINE, undefined, false);
    const sample = await api.GrammarMatcher.createGrammarMatcher(anyObject);
    const makeMatcher = matcherFactory(sample);
    sample.dispose();
    anyObject.dispose();
    return new JsonGrammarCompiler(api, compiler, makeMatcher, vocab, eosTokenIds);
  }

  /** Throws GrammarError for a schema that cannot be compiled. */
  async compile(spec: GrammarSpec): Promise<CompiledGrammar> {
    const request = schemaOf(spec);
    const grammar = await this.cached(`${request.strict}\n${request.schema}`, () => this.compileSchema(request.schema, request.strict));
    return { newMatcher: (maxTokens) => this.newMatcher(grammar, maxTokens, 'json') };
  }

  /**
   * A grammar for a reply with tools, as an xgrammar structural tag: each call is written in
   * the syntax's own markup with the function's name, then its arguments under the
   * function's schema (one line, as JSON mode writes), then the closing markup. Optional
   * calls leave text free until the syntax's trigger, and constrain the call it opens. Throws
   * GrammarError for a parameters schema that cannot be compiled, or calls of a function that
   * is not among the tools.
   */
  async compileToolCalls(request: ToolCallRequest): Promise<CompiledGrammar> {
    const schemas = await Promise.all(request.tools.map((tool, i) => this.checkedSchema(tool, i)));
    const named = typeof request.calls === 'object' ? request.calls.only : null;
    const used = request.tools.map((tool, i) => ({ name: tool.name, schema: schemas[i] })).filter((tool) => named === null || tool.name === named);
    if (used.length === 0) throw new GrammarError(`names ${JSON.stringify(named)}, which is not among the tools`, { kind: 'unknown_function' });
    const { syntax } = request;
    const stopAfterFirst = !(request.parallel && syntax.parallel);
    const key = `tools\n${syntax.format}\n${String(request.calls === 'optional')}\n${stopAfterFirst}\n${JSON.stringify(used)}`;
    const grammar = await this.cached(key, async () => {
      const tags = await Promise.all(
        used.map(async (tool) => ({
          type: 'tag',
          begin: callOpening(syntax, tool.name),
          content: { type: 'grammar', grammar: await this.ebnf(tool.schema, true) },
          end: syntax.end,
        })),
      );
      const format =
        request.calls === 'optional'
          ? { type: 'triggered_tags', triggers: [syntax.trigger], tags, at_least_one: false, stop_after_first: stopAfterFirst }
          : { type: 'tags_with_separator', tags, separator: syntax.separator, at_least_one: true, stop_after_first: stopAfterFirst };
      return this.compiler.compileStructuralTag({ type: 'structural_tag', format });
    });
    const trigger = this.trigger(syntax.trigger, request.calls === 'optional');
    return { newMatcher: (maxTokens) => this.newMatcher(grammar, maxTokens, 'tool_calls', { lexer: new ToolCallLexer(syntax), trigger }) };
  }

  private cached(key: string, compile: () => Promise<XgCompiledGrammar>): Promise<XgCompiledGrammar> {
    let compiled = this.cache.get(key);
    if (compiled) {
      this.cache.delete(key); // re-inserted below as the most recently used
    } else {
      compiled = compile();
      compiled.catch(() => this.cache.delete(key));
    }
    this.cache.set(key, compiled);
    this.evict();
    return compiled;
  }

  /** A tool's parameters schema as text, once xgrammar has been seen to take it. */
  private async checkedSchema(tool: ToolSpec, index: number): Promise<string> {
    const fault: GrammarFault = { kind: 'tool_parameters', index };
    const schema = tool.parameters ?? NO_PARAMETERS;
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new GrammarError('must be a JSON schema object', fault);
    const text = JSON.stringify(schema);
    try {
      await schemaProbe.check(text, true, ANY_WHITESPACE, ONE_LINE);
    } catch (err) {
      throw new GrammarError(`cannot be compiled: ${(err as Error).message}`, fault);
    }
    return text;
  }

  /**
   * A checked schema as xgrammar EBNF, written as JSON mode writes JSON, with numbers that
   * parse to finite values and exact integers (see number-bounds) and ranges written by
   * number-ranges.
   */
  private async ebnf(schema: string, strict: boolean): Promise<string> {
    const ranges = NumberRanges.of(schema);
    const grammar = await this.api.Grammar.fromJSONSchema(ranges.schema, ANY_WHITESPACE, ONE_LINE, undefined, strict);
    try {
      return ranges.splice(withBoundedNumbers(withoutRawControlCharacters(grammar.toString())));
    } finally {
      grammar.dispose();
    }
  }

  private trigger(text: string, freeTextEnds: boolean): GrammarTrigger {
    const bytes = Buffer.from(text, 'utf8');
    let tokens = this.triggerTokens.get(text);
    if (!tokens) {
      const last = bytes[bytes.length - 1];
      tokens = new Uint8Array(this.vocab.size);
      for (let id = 0; id < this.vocab.size; id++) if (this.vocab.bytes(id).includes(last)) tokens[id] = 1;
      this.triggerTokens.set(text, tokens);
    }
    return { bytes, tokens, freeTextEnds };
  }

  private async compileSchema(schema: string, strict: boolean): Promise<XgCompiledGrammar> {
    try {
      await schemaProbe.check(schema, strict, ANY_WHITESPACE, ONE_LINE);
    } catch (err) {
      throw new GrammarError(`cannot be compiled: ${(err as Error).message}`, { kind: 'schema' });
    }
    return this.compiler.compileGrammar(await this.ebnf(schema, strict));
  }


  private newMatcher(grammar: XgCompiledGrammar, maxTokens: number, kind: GrammarKind, options?: MatcherOptions): GrammarMatcher {
    const matcher = new JsonGrammarMatcher(this.makeMatcher(grammar), this.vocab, this.eosTokenIds, maxTokens, options);
    if (matcher.tooLongToClose) {
      matcher.dispose();
      throw new GrammarError(
        `the smallest document is longer than ${MAX_CLOSING_BYTES} bytes: more than constrained decoding can promise to close within the budget`,
        { kind: 'unclosable', grammar: kind, maxBytes: MAX_CLOSING_BYTES },
      );
    }
    if (matcher.minimalDocument > maxTokens) {
      matcher.dispose();
      throw new GrammarBudgetError(matcher.minimalDocument, maxTokens, kind);
    }
    return matcher;
  }

  private evict(): void {
    while (this.cache.size > CACHE_SIZE) {
      const [oldest, compiled] = this.cache.entries().next().value as [string, Promise<XgCompiledGrammar>];
      this.cache.delete(oldest);
      // A matcher keeps its own reference to the grammar, so live matchers are unaffected.
      compiled.then((g) => g.dispose()).catch(() => undefined);
    }
  }
}

/**
 * xgrammar's rule for a character of a string with a maxLength, `[^\"\\\r\n]` in its EBNF,
 * lets the control characters U+0000-U+001F through, which JSON only allows escaped: such output would
 * not parse. They get the class every other string rule of xgrammar has.
 */
const LENGTH_LIMITED_CHAR = '[^\\"\\\\\\r\\n]';
const JSON_STRING_CHAR = '[^\\0-\\x1f\\"\\\\\\r\\n]';

function withoutRawControlCharacters(ebnf: string): string {
  return ebnf.split(LENGTH_LIMITED_CHAR).join(JSON_STRING_CHAR);
}

/** The schema text to compile and whether it is strict; rejects a schema that is not an object. */
function schemaOf(spec: GrammarSpec): { schema: string; strict: boolean } {
  if (spec.kind === 'any_object') return { schema: ANY_OBJECT, strict: false };
  const { schema } = spec;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new GrammarError('must be a JSON object', { kind: 'schema' });
  }
  return { schema: JSON.stringify(schema), strict: spec.strict };
}
