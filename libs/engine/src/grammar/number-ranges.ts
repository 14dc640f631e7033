/**
 * Numeric ranges (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`) written as
 * grammar rules here rather than by xgrammar. xgrammar's range rules (web-xgrammar 0.1.27)
 * are unsound both ways: a negative minimum admits a lone "-" and no negative value
 * (`{"type": "integer", "minimum": -3}` refuses -2), an integer-valued bound leaves out every
 * fraction (`{"type": "number", "exclusiveMinimum": 0}` refuses 0.5) and exclusive number bounds
 * are taken as inclusive.
 *
 * Each bounded integer or number schema is swapped for a placeholder `const` before xgrammar
 * sees the schema (NumberRanges.of), and the placeholder's literal in xgrammar's EBNF is then
 * replaced by a rule built here (splice). The rules allow exactly the values in range, written
 * without an exponent: an optional minus sign (never "-0"), an integer part without leading
 * zeros and, for `number`, an optional fraction. A side without a bound
 * of its own is bounded by ±(2^53 - 1), as number-bounds bounds every unbounded number.
 */

/** Zeros a fraction that must be above zero may start with before its first other digit. */
const ZEROS = 15;
const PLACEHOLDER = (i: number) => `__trainyard_number_range_${i}__`;
const RULE = (i: number) => `trainyard_number_range_${i}`;
const BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];
/** Keywords that may sit beside the bounds of a schema this module writes the rule of. */
const ANNOTATIONS = new Set(['type', 'title', 'description', 'default', 'examples', '$comment', ...BOUNDS]);
/** Keywords whose values are data, not schemas: never searched for bounded numbers. */
const DATA = new Set(['const', 'enum', 'default', 'examples']);

/** A non-negative decimal, exactly: integer digits and fraction digits without trailing zeros. */
interface Magnitude {
  int: bigint;
  frac: string;
}

/** One side of a range: its magnitude's sign, the magnitude, and whether the bound itself is out. */
interface Bound {
  negative: boolean;
  value: Magnitude;
  exclusive: boolean;
}

export class NumberRanges {
  private constructor(
    /** The schema with every bounded number swapped for its placeholder. */
    readonly schema: string,
    /** The rules of every range, in EBNF lines. */
    private readonly rules: string[],
    private readonly count: number,
  ) {}

  /**
   * The schema text with its bounded integers and numbers taken out. Throws an Error naming
   * the problem for a bound that is not a finite number or a range that holds no value.
   */
  static of(schemaText: string): NumberRanges {
    if (!/"(minimum|maximum|exclusiveMinimum|exclusiveMaximum)"/.test(schemaText)) return new NumberRanges(schemaText, [], 0);
    const rules: string[] = [];
    let count = 0;
    const rewritten = replaceBounded(JSON.parse(schemaText) as unknown, (node) => {
      rules.push(...new RangeRules(RULE(count)).write(node));
      return { const: PLACEHOLDER(count++) };
    });
    return count === 0 ? new NumberRanges(schemaText, [], 0) : new NumberRanges(JSON.stringify(rewritten), rules, count);
  }

  /** xgrammar's EBNF for `schema`, with each placeholder replaced by its range's rule. */
  splice(ebnf: string): string {
    let text = ebnf;
    for (let i = 0; i < this.count; i++) text = text.split(`"\\"${PLACEHOLDER(i)}\\""`).join(RULE(i));
    return [text, ...this.rules].join('\n');
  }
}

/** The value with every bounded integer or number schema in it replaced by `swap(schema)`. */
function replaceBounded(node: unknown, swap: (schema: Record<string, unknown>) => unknown): unknown {
  if (Array.isArray(node)) return node.map((item) => replaceBounded(item, swap));
  if (typeof node !== 'object' || node === null) return node;
  const schema = node as Record<string, unknown>;
  if (isBoundedNumber(schema)) return swap(schema);
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, DATA.has(key) ? value : replaceBounded(value, swap)]));
}

function isBoundedNumber(schema: Record<string, unknown>): boolean {
  if (schema.type !== 'integer' && schema.type !== 'number') return false;
  const keys = Object.keys(schema);
  return keys.some((key) => BOUNDS.includes(key)) && keys.every((key) => ANNOTATIONS.has(key));
}

/**
 * The tighter of a schema's inclusive and exclusive bound on one side (`side` -1 for below),
 * or ±MAX_SAFE where it sets neither: an integer beyond that is the schema's to ask for.
 * Draft 4's boolean exclusiveMinimum/exclusiveMaximum makes the inclusive bound exclusive.
 */
function bound(schema: Record<string, unknown>, inclusiveKey: string, exclusiveKey: string, side: 1 | -1): Bound {
  const inclusive = schema[inclusiveKey];
  const exclusive = schema[exclusiveKey];
  const candidates: { value: number; exclusive: boolean }[] = [];
  if (inclusive !== undefined) candidates.push({ value: finiteBound(inclusiveKey, inclusive), exclusive: exclusive === true });
  if (exclusive !== undefined && typeof exclusive !== 'boolean') candidates.push({ value: finiteBound(exclusiveKey, exclusive), exclusive: true });
  if (candidates.length === 0) candidates.push({ value: side * Number.MAX_SAFE_INTEGER, exclusive: false });
  // The tightest: the largest lower bound (or the smallest upper one); at a tie the exclusive one.
  const tightest = candidates.reduce((a, b) => (side * b.value < side * a.value || (b.value === a.value && b.exclusive) ? b : a));
  return { negative: tightest.value < 0, value: magnitude(tightest.value), exclusive: tightest.exclusive };
}

/** A bound's value, which must be a number that JSON writes without an exponent (|n| < 1e21). */
function finiteBound(key: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error(`${key} must be a finite number`);
  if (Math.abs(value) >= 1e21) throw new Error(`${key} must be within ±1e21`);
  return value;
}

/** |n| as exact decimal digits: the shortest decimal that reads back as n, without an exponent. */
function magnitude(n: number): Magnitude {
  const [mantissa, exp] = Math.abs(n).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const point = 1 + Number(exp);
  const int = point <= 0 ? '0' : digits.slice(0, point).padEnd(point, '0');
  const frac = point >= digits.length ? '' : point < 0 ? '0'.repeat(-point) + digits : digits.slice(point);
  return { int: BigInt(int), frac: frac.replace(/0+$/, '') };
}

// --- EBNF: one rule per state of reading a number, as a right-linear grammar ---
//
// Every rule's alternatives start with disjoint digit classes (or "." or the end), so that no two
// alternatives of a rule share a first atom: xgrammar 0.1.27 mis-merges some alternatives that
// do (`[2-9] [0-9]{3} | [1-9] [0-9]{4} | [1-9] [0-9]{5}` accepts any longer run of digits).

/** A sequence's item: a literal, a character class (possibly repeated) or a rule's name. */
type Atom = string;
/** Alternatives, each a sequence of atoms ([] is the empty text); null is the empty set. */
type Choice = Atom[][] | null;

const EMPTY: Choice = [[]];
const digitClass = (from: number, to: number): Atom => (from === to ? `"${from}"` : `[${from}-${to}]`);

function alt(...options: Choice[]): Choice {
  const kept = options.flatMap((option) => option ?? []);
  return kept.length === 0 ? null : kept;
}

/** What may follow an integer part: a fraction within bounds (or none, which reads as .0), or nothing (WHOLE). */
type Ending = { above: FractionBound | null; below: FractionBound | null } | typeof WHOLE;
/** An integer's ending: no fraction at all, not even ".0". */
const WHOLE = 'whole';

/** Writes one range's rules: the root rule `name` and a rule for each state it reads through. */
class RangeRules {
  private readonly lines: string[] = [];
  private readonly names = new Map<string, string>();

  constructor(private readonly name: string) {}

  /** The rules of a bounded schema's values. */
  write(schema: Record<string, unknown>): string[] {
    const integer = schema.type === 'integer';
    const low = bound(schema, 'minimum', 'exclusiveMinimum', -1);
    const high = bound(schema, 'maximum', 'exclusiveMaximum', 1);
    const values = integer ? this.integerRange(low, high) : this.numberRange(low, high);
    if (values === null) throw new Error(`the range of ${JSON.stringify(schema)} holds no ${integer ? 'integer' : 'number'}`);
    return [`${this.name} ::= ${body(values)}`, ...this.lines];
  }

  /** The name of the rule for a state (its key), written on first use. */
  private state(key: string, build: () => Choice): Atom | null {
    const known = this.names.get(key);
    if (known !== undefined) return known || null;
    const choice = build();
    const name = choice === null ? '' : `${this.name}_${this.names.size + 1}`;
    this.names.set(key, name);
    if (choice !== null) this.lines.push(`${name} ::= ${body(choice)}`);
    return name || null;
  }

  /** Integers in [low, high], sign included. */
  private integerRange(low: Bound, high: Bound): Choice {
    const lo = integerBound(low, 'up');
    const hi = integerBound(high, 'down');
    if (lo > hi) return null;
    const negatives = lo < 0n ? this.signed(this.digits({ lo: hi < 0n ? -hi : 1n, hi: -lo, atLo: WHOLE, inside: WHOLE, atHi: WHOLE })) : null;
    const others = hi >= 0n ? this.digits({ lo: lo > 0n ? lo : 0n, hi, atLo: WHOLE, inside: WHOLE, atHi: WHOLE }) : null;
    return alt(others, negatives);
  }

  /** Numbers in the range, sign included: an integer part and an optional fraction. */
  private numberRange(low: Bound, high: Bound): Choice {
    const lowValue = signed(low);
    const highValue = signed(high);
    if (lowValue > highValue || (lowValue === highValue && (low.exclusive || high.exclusive))) return null;
    const zero: Bound = { negative: false, value: { int: 0n, frac: '' }, exclusive: false };
    // x >= 0 from max(low, 0) to high; x < 0 as "-" and a magnitude from max(-high, 0) (0 itself out) to -low.
    const others = highValue > 0 || (highValue === 0 && !high.exclusive) ? this.magnitudes(low.negative ? zero : low, high) : null;
    const negatives = low.negative ? this.signed(this.magnitudes(high.negative ? high : { ...zero, exclusive: true }, low)) : null;
    return alt(others, negatives);
  }

  /** "-" then a magnitude. */
  private signed(magnitude: Choice): Choice {
    const rest = magnitude && this.state(`signed ${JSON.stringify(magnitude)}`, () => magnitude);
    return rest ? [['"-"', rest]] : null;
  }

  /** Non-negative decimals from `low` to `high` (their magnitudes; low <= high). */
  private magnitudes(low: Bound, high: Bound): Choice {
    const above: FractionBound = { digits: low.value.frac, strict: low.exclusive };
    const below: FractionBound = { digits: high.value.frac, strict: high.exclusive };
    const atLo: Ending = low.value.int === high.value.int ? { above, below } : { above, below: null };
    return this.digits({ lo: low.value.int, hi: high.value.int, atLo, inside: { above: null, below: null }, atHi: { above: null, below } });
  }

  /**
   * Integer parts from lo to hi (0 <= lo <= hi), without leading zeros, each followed by what
   * its value allows: `atLo` after lo, `atHi` after hi, `inside` after one between.
   */
  private digits(range: { lo: bigint; hi: bigint; atLo: Ending; inside: Ending; atHi: Ending }): Choice {
    const { lo, hi } = range;
    const longest = String(hi).length;
    /** Whether some number in range starts with the digits of `prefix` (k of them). */
    const viable = (prefix: bigint, k: number) => {
      for (let m = 0; k + m <= longest; m++) {
        const scale = 10n ** BigInt(m);
        if (prefix * scale <= hi && prefix * scale + scale - 1n >= lo) return true;
      }
      return false;
    };
    const ending = (v: bigint): Ending | null => (v < lo || v > hi ? null : v === lo ? range.atLo : v === hi ? range.atHi : range.inside);
    /**
     * The state's key, which says exactly what may follow `prefix`: what ends it here, and for
     * each length of more digits, the suffixes from lo's to hi's (`<` and `>` where the range
     * reaches past them, so that a suffix there is inside, not at lo or hi).
     */
    const key = (prefix: bigint, k: number, leadingZero: boolean) => {
      if (leadingZero) return `zero ${JSON.stringify(range.atLo)}`;
      const parts: string[] = [JSON.stringify(ending(prefix)), JSON.stringify([range.atLo, range.inside, range.atHi])];
      for (let m = 1; k + m <= longest; m++) {
        const scale = 10n ** BigInt(m);
        const from = lo - prefix * scale;
        const to = hi - prefix * scale;
        parts.push(from > scale - 1n || to < 0n ? 'x' : `${from < 0n ? '<' : from}-${to > scale - 1n ? '>' : to}`);
      }
      return `int ${parts.join(' ')}`;
    };
    const read = (prefix: bigint, k: number, leadingZero: boolean): Choice => {
      const here = leadingZero ? (lo === 0n ? range.atLo : null) : k === 0 ? null : ending(prefix);
      const options: Choice[] = [here === null ? null : here === WHOLE ? EMPTY : this.fraction(here.above, here.below)];
      if (!leadingZero) {
        const next = (d: number) => (viable(prefix * 10n + BigInt(d), k + 1) && !(k === 0 && d === 0) ? key(prefix * 10n + BigInt(d), k + 1, false) : null);
        let from = 0;
        for (let d = 1; d <= 10; d++) {
          if (d < 10 && next(d) === next(from)) continue;
          const value = prefix * 10n + BigInt(from);
          const target = next(from) && this.state(next(from) as string, () => read(value, k + 1, false));
          if (target) options.push([[digitClass(from, d - 1), target]]);
          from = d;
        }
      }
      return alt(...options);
    };
    const zero = lo === 0n ? this.state(key(0n, 1, true), () => read(0n, 1, true)) : null;
    return alt(zero ? [['"0"', zero]] : null, read(0n, 0, false));
  }

  /** An optional fraction (none reads as .0) between `above` and `below`. */
  private fraction(above: FractionBound | null, below: FractionBound | null): Choice {
    const a = above && above.digits === '' && !above.strict ? null : above;
    if (below && below.digits === '' && below.strict) return null;
    const digits = this.tail(a, below, true);
    return alt(endAllowed(a, below) ? EMPTY : null, digits ? [['"."', ...digits]] : null);
  }

  /**
   * Digit strings that, read after the digits already written, stay within both bounds (given
   * as the bounds' digits still to match); at least one digit where `oneDigit`. As atoms to
   * follow "." (or a digit): a rule's name, or the one repeated class of a state that loops.
   */
  private tail(above: FractionBound | null, below: FractionBound | null, oneDigit: boolean): Atom[] | null {
    const a = above && above.digits === '' && !above.strict ? null : above;
    const b = below;
    if (b && b.digits === '' && b.strict) return null;
    // The states that would repeat: no bound, above zero, nothing but zeros.
    if (a === null && b === null) return [oneDigit ? '[0-9]+' : '[0-9]*'];
    // Above zero: a nonzero digit after at most ZEROS zeros, so that a closing walk that writes
    // zeros first still ends (json-matcher); smaller fractions need an exponent in any case.
    if (a !== null && a.digits === '' && b === null) return [`[0]{0,${ZEROS}}`, '[1-9]', '[0-9]*'];
    if (a !== null && a.digits === '' && b !== null && b.digits === '') return null; // above 0 and at most 0
    if (a === null && b !== null && b.digits === '') return [oneDigit ? '[0]+' : '[0]*'];
    const name = this.state(`frac ${JSON.stringify([a, b, oneDigit])}`, () => {
      const options: Choice[] = [!oneDigit && endAllowed(a, b) ? EMPTY : null];
      // Digits that lead to the same next state form one class.
      const next = (digit: number) => JSON.stringify([step(a, digit, 'above'), step(b, digit, 'below')]);
      let from = 0;
      for (let digit = 1; digit <= 10; digit++) {
        if (digit < 10 && next(digit) === next(from)) continue;
        const na = step(a, from, 'above');
        const nb = step(b, from, 'below');
        const rest = na !== 'out' && nb !== 'out' ? this.tail(na, nb, false) : null;
        if (rest) options.push([[digitClass(from, digit - 1), ...rest]]);
        from = digit;
      }
      return alt(...options);
    });
    return name ? [name] : null;
  }
}

/** A rule's body from its alternatives, as xgrammar prints one. */
function body(choice: Atom[][]): string {
  return `(${choice.map((sequence) => `(${sequence.length === 0 ? '""' : sequence.join(' ')})`).join(' | ')})`;
}

/** The nearest integer inside a bound: rounding `up` for a lower bound, `down` for an upper one. */
function integerBound(b: Bound, direction: 'up' | 'down'): bigint {
  const signed = b.negative ? -b.value.int : b.value.int;
  const fractional = b.value.frac !== '';
  // signed is the value truncated toward zero.
  let n: bigint;
  if (direction === 'up') n = fractional ? (b.negative ? signed : signed + 1n) : b.exclusive ? signed + 1n : signed;
  else n = fractional ? (b.negative ? signed - 1n : signed) : b.exclusive ? signed - 1n : signed;
  return n;
}

/** A bound's value as a number, for comparisons (bounds are doubles to begin with). */
function signed(b: Bound): number {
  const value = Number(`${b.value.int}.${b.value.frac || '0'}`);
  return b.negative ? -value : value;
}

/**
 * A bound on what follows the decimal point, as digits without trailing zeros ("" is .0);
 * strict when the bound itself is out. null: no bound on that side.
 */
interface FractionBound {
  digits: string;
  strict: boolean;
}

/** Whether no more digits (zeros from here) fit both bounds. */
function endAllowed(above: FractionBound | null, below: FractionBound | null): boolean {
  const aboveOk = above === null || (above.digits === '' && !above.strict);
  const belowOk = below === null || below.digits !== '' || !below.strict;
  return aboveOk && belowOk;
}

/** A bound after one more digit: still to match (its remaining digits), met for good (null), or broken. */
function step(bound: FractionBound | null, digit: number, side: 'above' | 'below'): FractionBound | null | 'out' {
  if (bound === null) return null;
  const d = bound.digits === '' ? 0 : Number(bound.digits[0]);
  if (digit === d) return { digits: bound.digits.slice(1), strict: bound.strict };
  return (side === 'above') === digit > d ? null : 'out';
}
