import type { LogitsProcessor, QuickCheck } from '../sampling';
import type { ByteVocabulary } from './byte-vocabulary';
import { JsonLexer } from './json-lexer';
import { XgGrammarMatcher, nextTokenBitmask } from './xgrammar-loader';

export interface GrammarMatcher {
  /**
   * Masks (sets to -Infinity, in place, and returns) every token that cannot continue valid
   * JSON; end-of-sequence only when the text is complete. Near the end of the budget, also
   * every token after which the text could no longer be closed in `remainingTokens - 1`.
   */
  mask(logits: Float32Array, remainingTokens: number): Float32Array;
  accept(tokenId: number): void;
  /** The text accepted so far is a complete JSON value (for json_schema: one the schema allows). */
  isComplete(): boolean;
  /** Accepts the tokens of `generated` (the whole sequence so far) not accepted yet. */
  catchUp(generated: readonly number[]): void;
  /** sampleToken's hook: catches up with the generated tokens, then masks with what is left of maxTokens. */
  logitsProcessor(): LogitsProcessor;
  /** sampleToken's quick check: whether mask() would allow one token, where that is cheap to tell. */
  quickCheck(): QuickCheck;
  /** SamplingParams.quickCheckApplies: catches up with the generated tokens, then whether the quick check can allow any token (false near the end of the budget). */
  quickCheckApplies(): (generated: readonly number[]) => boolean;
  /** GenerationParams.documentComplete: catches up with the generated tokens, then isComplete(). */
  completeCheck(): (generated: readonly number[]) => boolean;
  /**
   * Where the grammar's text begins among the generated tokens (after a reply's reasoning:
   * ReasoningGate); 0 until set. The budget still counts every generated token.
   */
  startAt(index: number): void;
  /** Tokens of the smallest document the grammar allows (see JsonGrammarMatcher). */
  readonly minimalDocument: number;
  /** Tokens the whole reply may have, the grammar's text included. */
  readonly maxTokens: number;
  dispose(): void;
}

/**
 * How closing in time works.
 *
 * Closing cost: the number of tokens still needed to finish the text. It is measured, not
 * guessed, by walking the grammar matcher forward one byte token at a time (every byte-level
 * vocabulary has all 256), taking at each step the first byte the JSON lexer says closes
 * fastest (`"` in a string, `}` after a value, `0` for a missing value...) that the grammar
 * accepts, falling back to any byte it accepts (a required key, an enum value, a digit), until
 * end-of-sequence is allowed; then rolling the matcher back. The walk's bytes, tokenized, are
 * a real completion, so the cost is one the generator can always achieve.
 *
 * Invariant kept at every step: cost <= remaining budget. A token is allowed only when the
 * cost after it fits in the budget left after it:
 * - the first token of the closing walk always fits (cost drops by one);
 * - a token of n bytes raises the cost by at most GROWTH_PER_BYTE * n + (size of the
 *   smallest complete document, which covers a schema object's required keys); tokens
 *   within that bound of the spare budget are allowed without looking;
 * - the most likely of the others (MAX_TRIALS) are tried: accept, measure, roll back; the
 *   rest are masked.
 * Far from the end nothing is tried and sampling is untouched; in the last tokens the model
 * can still choose among what fits, and at the very end only the closing walk is left. The
 * caller keeps counting tokens as usual; a JSON document closed this way on the budget's last
 * token is complete, and reported so (GenerationParams.documentComplete: "stop", not "length").
 */
const GROWTH_PER_BYTE = 6; // `,` in an object commits to ` "": 0`
const MAX_TRIALS = 12;
/** The longest closing walk; a grammar whose smallest document is longer cannot be promised to close. */
export const MAX_CLOSING_BYTES = 1024;
/** Bytes tried when the lexer's preferences are refused: printable ASCII, then the rest. */
const FALLBACK_BYTES = [...range(0x20, 0x7e), ...range(0x80, 0xff), ...range(0x00, 0x1f), 0x7f];

/** What the closing walk asks of the text so far: which bytes close it soonest. */
export interface ClosingLexer {
  clone(): ClosingLexer;
  feed(byte: number): void;
  feedAll(bytes: Uint8Array): void;
  closingPreferences(): number[];
}

/**
 * A trigger: text that, written anywhere in free text, opens a structure (a tool call) that
 * must then be finished. Its cost is not bounded by the bytes of the token that completes
 * it, so such tokens (those holding the trigger's last byte) carry the cost of the smallest
 * structure it opens on top.
 */
export interface GrammarTrigger {
  bytes: Uint8Array;
  /** 1 for every token holding the trigger's last byte, by id (read for the whole vocabulary at every masked step). */
  tokens: Uint8Array;
  /**
   * Free text may end anywhere (optional tool calls): while the closing walk is empty, only
   * tokens that complete the trigger can raise the cost.
   */
  freeTextEnds: boolean;
}

export interface MatcherOptions {
  /** How the closing walk reads the text; JSON by default. */
  lexer?: ClosingLexer;
  trigger?: GrammarTrigger;
}

export class JsonGrammarMatcher implements GrammarMatcher {
  private readonly lexer: ClosingLexer;
  private readonly trigger: GrammarTrigger | null;
  /** Closing cost right after the trigger: the smallest structure it opens (0 without a trigger). */
  private readonly triggerCost: number;
  private acceptedTokens = 0;
  /** Index in the generated tokens of the grammar's first token (startAt). */
  private start = 0;
  private readonly eos: number;
  private readonly eosIds: Set<number>;
  /**
   * Closing cost of the empty text, in tokens: the smallest document the grammar allows (0 if
   * the walk finds none). The invariant needs it to fit in maxTokens; end-of-sequence does not
   * count, since a budget that runs out ends the text as well.
   */
  readonly minimalDocument: number;
  /** The smallest document is longer than MAX_CLOSING_BYTES: closing in time cannot be promised. */
  readonly tooLongToClose: boolean;
  /**
   * An upper bound on the closing cost now: the last walk's length plus, for each token
   * accepted since, the most a token can raise it. While the bound leaves room for any token,
   * no walk is needed (null: walk next time).
   */
  private costBound: number | null = null;

  constructor(
    private readonly matcher: XgGrammarMatcher,
    private readonly vocab: ByteVocabulary,
    eosTokenIds: number[],
    readonly maxTokens: number,
    options: MatcherOptions = {},
  ) {
    if (eosTokenIds.length === 0) throw new Error('a JSON grammar needs an end-of-sequence token');
    this.eos = eosTokenIds[0];
    this.eosIds = new Set(eosTokenIds);
    this.lexer = options.lexer ?? new JsonLexer();
    this.trigger = options.trigger ?? null;
    const minimal = this.closingWalk();
    this.minimalDocument = minimal.tokens?.length ?? 0;
    this.tooLongToClose = minimal.tokens === null && minimal.reason === 'too long';
    this.triggerCost = this.trigger ? this.costAfterBytes(this.trigger.bytes) : 0;
  }

  mask(logits: Float32Array, remainingTokens: number): Float32Array {
    if (this.matcher.isTerminated()) return onlyToken(logits, this.eos);
    const bitmask = nextTokenBitmask(this.matcher, this.vocab.size);
    for (let id = 0; id < logits.length; id++) {
      if (id >= this.vocab.size || (bitmask[id >>> 5] & (1 << (id & 31))) === 0) logits[id] = -Infinity;
    }
    // Far from the end of the budget the walk would change nothing (the same test as below, with cost <= bound).
    if (this.farFromEnd(remainingTokens)) return logits;
    const walk = this.closingWalk().tokens;
    this.costBound = walk?.length ?? null;
    if (walk === null) return logits; // no byte tokens to close with: the grammar mask alone
    const spare = remainingTokens - 1 - walk.length - this.minimalDocument;

    if (GROWTH_PER_BYTE * this.vocab.longestToken + this.triggerCost <= spare) return logits;
    const onlyTriggers = walk.length === 0 && this.trigger?.freeTextEnds === true;
    const toTry: number[] = [];
    for (let id = 0; id < logits.length; id++) {
      if (logits[id] === -Infinity || this.eosIds.has(id)) continue;
      if (onlyTriggers && this.trigger?.tokens[id] !== 1) continue;
      if (this.growth(id) > spare) toTry.push(id);
    }
    if (toTry.length === 0) return logits;
    toTry.sort((a, b) => logits[b] - logits[a]);
    const fits = new Set(toTry.slice(0, MAX_TRIALS).filter((id) => this.costAfter(id) <= remainingTokens - 1));
    if (walk.length > 0) fits.add(walk[0]);
    for (const id of toTry) if (!fits.has(id)) logits[id] = -Infinity;
    return logits;
  }

  accept(tokenId: number): void {
    if (!this.matcher.acceptToken(tokenId)) throw new Error(`token ${tokenId} does not continue the grammar`);
    this.acceptedTokens++;
    if (this.costBound !== null) this.costBound += this.growth(tokenId) + this.minimalDocument;
    if (!this.eosIds.has(tokenId)) this.lexer.feedAll(this.vocab.bytes(tokenId));
  }

  isComplete(): boolean {
    return this.matcher.isTerminated() || this.canEnd();
  }

  catchUp(generated: readonly number[]): void {
    while (this.start + this.acceptedTokens < generated.length) this.accept(generated[this.start + this.acceptedTokens]);
  }

  startAt(index: number): void {
    if (this.acceptedTokens > 0) throw new Error('startAt must come before the grammar accepts a token');
    this.start = index;
  }

  logitsProcessor(): LogitsProcessor {
    return (logits, generated) => {
      this.catchUp(generated);
      this.mask(logits, this.maxTokens - generated.length);
    };
  }

  quickCheck(): QuickCheck {
    return (id, generated) => {
      this.catchUp(generated);
      return this.allowsFarFromEnd(id, this.maxTokens - generated.length);
    };
  }

  quickCheckApplies(): (generated: readonly number[]) => boolean {
    return (generated) => {
      this.catchUp(generated);
      return this.matcher.isTerminated() || this.farFromEnd(this.maxTokens - generated.length);
    };
  }

  completeCheck(): (generated: readonly number[]) => boolean {
    return (generated) => {
      this.catchUp(generated);
      return this.isComplete();
    };
  }

  dispose(): void {
    this.matcher.dispose();
  }

  /**
   * Whether mask() would allow `id`, by trying that one token instead of masking the
   * vocabulary: only far from the end of the budget, where every token the grammar accepts
   * leaves room to close (mask's own test for skipping its walk). Nearer the end: false.
   */
  private allowsFarFromEnd(id: number, remainingTokens: number): boolean {
    if (this.matcher.isTerminated()) return id === this.eos;
    if (!this.farFromEnd(remainingTokens) || id >= this.vocab.size) return false;
    if (!this.matcher.acceptToken(id)) return false;
    this.matcher.rollBack(1);
    return true;
  }

  /** Even the bound on the closing cost leaves room for any token: no walk can change the mask. */
  private farFromEnd(remainingTokens: number): boolean {
    return (
      this.costBound !== null &&
      GROWTH_PER_BYTE * this.vocab.longestToken + this.triggerCost <= remainingTokens - 1 - this.costBound - this.minimalDocument
    );
  }

  /** The most a token can raise the closing cost by, besides the smallest document. */
  private growth(id: number): number {
    return GROWTH_PER_BYTE * this.vocab.byteLengths[id] + (this.trigger?.tokens[id] === 1 ? this.triggerCost : 0);
  }

  /** Closing cost after these bytes (as byte tokens) from the start; 0 when the grammar refuses them. */
  private costAfterBytes(bytes: Uint8Array): number {
    const lexer = this.lexer.clone();
    let accepted = 0;
    try {
      for (const byte of bytes) {
        const id = this.vocab.byteTokenIds[byte];
        if (id < 0 || !this.matcher.acceptToken(id)) return 0;
        accepted++;
        lexer.feed(byte);
      }
      return this.closingWalk(lexer).tokens?.length ?? 0;
    } finally {
      if (accepted > 0) this.matcher.rollBack(accepted);
    }
  }

  /** Closing cost after a token, by trying it; Infinity when the text cannot be closed after it. */
  private costAfter(id: number): number {
    if (!this.matcher.acceptToken(id)) return Infinity;
    const lexer = this.lexer.clone();
    lexer.feedAll(this.vocab.bytes(id));
    const walk = this.closingWalk(lexer).tokens;
    this.matcher.rollBack(1);
    return walk?.length ?? Infinity;
  }

  /**
   * Tokens of a quick completion from the current state (see the comment above), or why none
   * was found. Text the grammar forces (a required key, a tool call's closing tag) is taken
   * whole, as xgrammar's jump-forward string, before the lexer is asked for a preference.
   */
  private closingWalk(lexer = this.lexer.clone()): ClosingWalk {
    const bytes: number[] = [];
    try {
      while (!this.canEnd()) {
        if (bytes.length >= MAX_CLOSING_BYTES) return { tokens: null, reason: 'too long' };
        const forced = this.acceptForced();
        if (forced.length > 0) {
          bytes.push(...forced);
          lexer.feedAll(forced);
          continue;
        }
        const byte = this.acceptFirst(lexer.closingPreferences());
        if (byte < 0) return { tokens: null, reason: 'no byte token fits' };
        bytes.push(byte);
        lexer.feed(byte);
      }
    } finally {
      if (bytes.length > 0) this.matcher.rollBack(bytes.length);
    }
    return { tokens: this.vocab.tokensFor(bytes) };
  }

  /** Accepts, byte by byte, the text the grammar allows next and nothing else; returns those bytes. */
  private acceptForced(): Uint8Array {
    const forced = Buffer.from(this.matcher.findJumpForwardString(), 'utf8');
    for (let i = 0; i < forced.length; i++) {
      const id = this.vocab.byteTokenIds[forced[i]];
      if (id < 0 || !this.matcher.acceptToken(id)) {
        if (i > 0) this.matcher.rollBack(i);
        return new Uint8Array(0);
      }
    }
    return forced;
  }

  /** Accepts the first of the preferred (then of all) bytes the grammar allows; returns it, or -1. */
  private acceptFirst(preferred: number[]): number {
    for (const candidates of [preferred, FALLBACK_BYTES]) {
      for (const byte of candidates) {
        const id = this.vocab.byteTokenIds[byte];
        if (id >= 0 && this.matcher.acceptToken(id)) return byte;
      }
    }
    return -1;
  }

  private canEnd(): boolean {
    if (!this.matcher.acceptToken(this.eos)) return false;
    this.matcher.rollBack(1);
    return true;
  }
}

/** A closing walk's outcome: the tokens that end the text, or why the walk found none. */
type ClosingWalk = { tokens: number[] } | { tokens: null; reason: 'too long' | 'no byte token fits' };

function onlyToken(logits: Float32Array, id: number): Float32Array {
  const keep = logits[id];
  logits.fill(-Infinity);
  logits[id] = Number.isFinite(keep) ? keep : 0;
  return logits;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
