import type { TextTokenizer } from '../tokenizer';
import { ByteVocabulary } from './byte-vocabulary';
import { GrammarMatcher, JsonGrammarMatcher, MAX_CLOSING_BYTES } from './json-matcher';
import { SchemaProbe } from './schema-probe';
import { XgCompiledGrammar, XgGrammarCompiler, XgGrammarMatcher, loadXgrammar, matcherFactory } from './xgrammar-loader';

/** OpenAI's response_format. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean | null } };

/**
 * A response_format that cannot be honoured (HTTP 400 at the edge): the message names the
 * problem, `param` the request field at fault.
 */
export class GrammarError extends Error {
  constructor(
    message: string,
    readonly param = 'response_format',
  ) {
    super(message);
    this.name = 'GrammarError';
  }
}

/** A token budget too small for even the smallest document the grammar allows. */
export class GrammarBudgetError extends GrammarError {
  constructor(
    readonly minTokens: number,
    readonly maxTokens: number,
  ) {
    super(`response_format needs at least ${minTokens} tokens for its smallest document, but max_tokens is ${maxTokens}`, 'max_tokens');
    this.name = 'GrammarBudgetError';
  }
}

export interface CompiledGrammar {
  /**
   * A matcher for one sequence that will be given at most maxTokens tokens. Throws
   * GrammarBudgetError when its smallest document needs more: the output could not parse.
   */
  newMatcher(maxTokens: number): GrammarMatcher;
}

/**
 * How JSON is written: one line, the separators ", " and ": " and no other whitespace outside
 * strings. Free whitespace is where constrained models loop (newline after newline until
 * max_tokens), and the fixed form costs nothing to JSON.parse.
 */
const ANY_WHITESPACE = false;
const ONE_LINE = -1;
/** json_object is "any object": a schema without properties, extra properties allowed. */
const ANY_OBJECT = '{"type": "object"}';
/** Compiled grammars kept per compiler; the least recently used goes first. */
const CACHE_SIZE = 64;
/** Shared by every compiler: checking a schema does not depend on the vocabulary. */
const schemaProbe = new SchemaProbe();

/**
 * Compiles response formats into token-level JSON grammars (XGrammar) for one tokenizer.
 * One per loaded model; it caches compiled grammars by schema text.
 *
 * json_schema grammars run in xgrammar's strict mode: properties and items the schema does
 * not name are not generated (the output stays valid against the schema either way).
 */
export class JsonGrammarCompiler {
  private readonly cache = new Map<string, Promise<XgCompiledGrammar>>();

  private constructor(
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
    return new JsonGrammarCompiler(compiler, makeMatcher, vocab, eosTokenIds);
  }

  /** null for plain text. Throws GrammarError for a schema that cannot be compiled. */
  async compile(format: ResponseFormat): Promise<CompiledGrammar | null> {
    const request = schemaOf(format);
    if (!request) return null;
    const key = `${request.strict}\n${request.schema}`;
    let compiled = this.cache.get(key);
    if (compiled) {
      this.cache.delete(key); // re-inserted below as the most recently used
    } else {
      compiled = this.compileSchema(request.schema, request.strict);
      compiled.catch(() => this.cache.delete(key));
    }
    this.cache.set(key, compiled);
    this.evict();
    const grammar = await compiled;
    return { newMatcher: (maxTokens) => this.newMatcher(grammar, maxTokens) };
  }

  private async compileSchema(schema: string, strict: boolean): Promise<XgCompiledGrammar> {
    try {
      await schemaProbe.check(schema, strict, ANY_WHITESPACE, ONE_LINE);
    } catch (err) {
      throw new GrammarError(`response_format.json_schema.schema cannot be compiled: ${(err as Error).message}`);
    }
    return this.compiler.compileJSONSchema(schema, ANY_WHITESPACE, ONE_LINE, undefined, strict);
  }

  private newMatcher(grammar: XgCompiledGrammar, maxTokens: number): GrammarMatcher {
    const matcher = new JsonGrammarMatcher(this.makeMatcher(grammar), this.vocab, this.eosTokenIds, maxTokens);
    if (matcher.tooLongToClose) {
      matcher.dispose();
      throw new GrammarError(
        `response_format's smallest document is longer than ${MAX_CLOSING_BYTES} bytes: more than JSON mode can promise to close within max_tokens`,
      );
    }
    if (matcher.minimalDocument > maxTokens) {
      matcher.dispose();
      throw new GrammarBudgetError(matcher.minimalDocument, maxTokens);
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

/** The schema text to compile and whether it is strict, or null for text; rejects malformed formats. */
function schemaOf(format: ResponseFormat): { schema: string; strict: boolean } | null {
  switch (format?.type) {
    case 'text':
      return null;
    case 'json_object':
      return { schema: ANY_OBJECT, strict: false };
    case 'json_schema': {
      const schema = format.json_schema?.schema;
      if (schema === undefined) return { schema: ANY_OBJECT, strict: false };
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
        throw new GrammarError('response_format.json_schema.schema must be a JSON object');
      }
      return { schema: JSON.stringify(schema), strict: true };
    }
    default:
      throw new GrammarError(`response_format.type must be text, json_object or json_schema, not ${JSON.stringify((format as { type?: unknown } | undefined)?.type)}`);
  }
}
