/**
 * Bounds on the JSON numbers xgrammar's grammars allow, so that every number parses to what a
 * schema means by it.
 *
 * xgrammar writes an integer part as `[1-9] [0-9]*` (or as fixed digits followed by a rule
 * `R ::= ("" | ([0-9] R))`, where a schema's minimum needs several) and an exponent as
 * `[eE] sign R` with `R ::= (([0-9] R) | ([0-9]))`: digit runs of any length, so a sampled
 * `1088E38282224821` parses to Infinity and a 50-digit integer to a value no double holds.
 * Rewritten here, in the grammar's EBNF text:
 * - an integer part of unbounded length is at most 2^53 - 1 (Number.MAX_SAFE_INTEGER), or at
 *   most SAFE_DIGITS digits after fixed leading digits, so an integer parses exactly;
 * - an exponent has at most two digits: with an integer part below 2^53 the largest number is
 *   about 9e15 * 1e99, far from the largest double (1.8e308).
 * Fractions stay unbounded: more digits there never make a number larger. Bounds a schema
 * gives itself (minimum, maximum) are written by xgrammar as fixed digit sequences, which are
 * left as they are. A digit run inside a string (a `pattern`) follows a quote or a pattern's
 * own rule, never `(`, a minus sign or a sign rule, and is left alone too.
 */

/** Number.MAX_SAFE_INTEGER: the largest integer a double holds, with every smaller one. */
const MAX_SAFE = String(Number.MAX_SAFE_INTEGER);
/** Digits any integer may have and still be safe (16-digit ones are safe only up to MAX_SAFE). */
const SAFE_DIGITS = MAX_SAFE.length - 1;
/** The rule added for an integer part without a bound: 1 to MAX_SAFE, no leading zero. */
const SAFE_NATURAL = 'json_safe_natural';

/** One digit as xgrammar prints it: a character class such as `[1-9]`, or a literal such as `"7"`. */
const DIGIT_ATOM = String.raw`(?:\[\d-\d\]|"\d")`;

/** The grammar with every unbounded integer part and exponent bounded (see above). */
export function withBoundedNumbers(ebnf: string): string {
  const lines = ebnf.split('\n');
  const digitRules = (shape: (name: string) => string) =>
    lines.map((line) => /^(\w+) ::= (.*)$/.exec(line)).filter((m): m is RegExpExecArray => m !== null && m[2] === shape(m[1])).map((m) => m[1]);
  /** `R ::= ("" | ([0-9] R))`: zero or more digits. */
  const anyDigits = digitRules((name) => `("" | ([0-9] ${name}))`);
  /** `R ::= (([0-9] R) | ([0-9]))`: one or more digits. */
  const someDigits = digitRules((name) => `(([0-9] ${name}) | ([0-9]))`);

  const run = [String.raw`\[0-9\]\*`, ...anyDigits.map((name) => `\\b${name}\\b`)].join('|');
  const integerPart = new RegExp(`((?:${DIGIT_ATOM} )*)(?:${run})`, 'g');
  const exponent = someDigits.length > 0 ? new RegExp(`(\\[eE\\] \\w+ )(?:${someDigits.join('|')})\\b`, 'g') : null;

  let used = false;
  const rewritten = lines.map((line) => {
    const m = /^(\w+) ::= (.*)$/.exec(line);
    if (!m || anyDigits.includes(m[1]) || someDigits.includes(m[1])) return line;
    let body = m[2].replace(integerPart, (match: string, atoms: string, offset: number, whole: string) => {
      if (!followsNumberStart(whole.slice(0, offset))) return match;
      const fixed = atoms.trim().split(' ').filter(Boolean);
      if (fixed.length === 1 && fixed[0] === '[1-9]') {
        used = true;
        return SAFE_NATURAL;
      }
      const more = SAFE_DIGITS - fixed.length;
      return more > 0 ? `${atoms}[0-9]{0,${more}}` : atoms.trimEnd();
    });
    if (exponent) body = body.replace(exponent, '$1[0-9]{1,2}');
    return `${m[1]} ::= ${body}`;
  });
  if (used) rewritten.push(`${SAFE_NATURAL} ::= ${safeNatural()}`);
  return rewritten.join('\n');
}

/**
 * Whether digits after `before` (a rule body up to them) start a number: at the start of an
 * alternative, after a minus sign or after a rule (xgrammar's optional sign). After anything
 * else (a quote, a decimal point) they are a string's or a fraction's.
 */
function followsNumberStart(before: string): boolean {
  const text = before.trimEnd();
  return text.endsWith('(') || text.endsWith('"-"') || /(^|[ (])\w+$/.test(text);
}

/** 1 to MAX_SAFE without leading zeros: up to SAFE_DIGITS digits freely, then MAX_SAFE's digits bound each place. */
function safeNatural(): string {
  const alternatives = [`([1-9] [0-9]{0,${SAFE_DIGITS - 1}})`];
  for (let i = 0; i < MAX_SAFE.length; i++) {
    const low = i === 0 ? 1 : 0;
    const high = Number(MAX_SAFE[i]) - 1;
    if (high < low) continue;
    const prefix = [...MAX_SAFE.slice(0, i)].map((d) => `"${d}"`);
    const rest = MAX_SAFE.length - i - 1;
    alternatives.push(`(${[...prefix, `[${low}-${high}]`, ...(rest > 0 ? [`[0-9]{${rest}}`] : [])].join(' ')})`);
  }
  alternatives.push(`(${[...MAX_SAFE].map((d) => `"${d}"`).join(' ')})`);
  return `(${alternatives.join(' | ')})`;
}
