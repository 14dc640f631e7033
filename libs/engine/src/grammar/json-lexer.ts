/**
 * Where a JSON text stands lexically: the stack of open containers, what may come next, and
 * whether a string, number or literal is in progress. It does not validate (the grammar
 * matcher does); it only knows which byte would move towards the end of the text fastest,
 * which the grammar alone cannot say: inside a string `}` is just a character, after `{` it
 * closes the object.
 */

type Expecting = 'value' | 'value-or-close' | 'key' | 'key-or-close' | 'colon' | 'comma-or-close' | 'end';
type Scalar = 'none' | 'string' | 'key' | 'number' | 'literal';

const code = (ch: string) => ch.charCodeAt(0);
const QUOTE = code('"');
const BACKSLASH = code('\\');
/** Shortest values first: 0, "", [], {}, null, true, false, -0. */
const VALUE_STARTS = [...'0"[{ntf-'].map(code);

export class JsonLexer {
  private stack: ('object' | 'array')[] = [];
  private expecting: Expecting = 'value';
  private scalar: Scalar = 'none';
  private escaped = false;

  clone(): JsonLexer {
    const copy = new JsonLexer();
    copy.stack = [...this.stack];
    copy.expecting = this.expecting;
    copy.scalar = this.scalar;
    copy.escaped = this.escaped;
    return copy;
  }

  /** A whole value has been read: nothing is open and nothing is in progress. */
  get complete(): boolean {
    return this.expecting === 'end' && this.scalar === 'none';
  }

  feedAll(bytes: Uint8Array): void {
    for (const b of bytes) this.feed(b);
  }

  feed(b: number): void {
    if (this.scalar === 'string' || this.scalar === 'key') {
      if (this.escaped) this.escaped = false;
      else if (b === BACKSLASH) this.escaped = true;
      else if (b === QUOTE) {
        this.expecting = this.scalar === 'key' ? 'colon' : this.afterValue();
        this.scalar = 'none';
      }
      return;
    }
    if (this.scalar === 'number' && /[0-9.eE+-]/.test(String.fromCharCode(b))) return;
    if (this.scalar === 'literal' && b >= code('a') && b <= code('z')) return;
    if (this.scalar !== 'none') {
      // A number or literal ends at the first byte that cannot continue it.
      this.scalar = 'none';
      this.expecting = this.afterValue();
    }
    this.structural(String.fromCharCode(b));
  }

  private structural(ch: string): void {
    if (ch === '{') {
      this.stack.push('object');
      this.expecting = 'key-or-close';
    } else if (ch === '[') {
      this.stack.push('array');
      this.expecting = 'value-or-close';
    } else if (ch === '}' || ch === ']') {
      this.stack.pop();
      this.expecting = this.afterValue();
    } else if (ch === '"') {
      this.scalar = this.expecting === 'key' || this.expecting === 'key-or-close' ? 'key' : 'string';
    } else if (ch === ':') {
      this.expecting = 'value';
    } else if (ch === ',') {
      this.expecting = this.top() === 'object' ? 'key' : 'value';
    } else if (/[0-9-]/.test(ch)) {
      this.scalar = 'number';
    } else if (/[a-z]/.test(ch)) {
      this.scalar = 'literal';
    }
    // Whitespace changes nothing.
  }

  private afterValue(): Expecting {
    return this.stack.length > 0 ? 'comma-or-close' : 'end';
  }

  private top(): 'object' | 'array' | undefined {
    return this.stack[this.stack.length - 1];
  }

  private closer(): number[] {
    const top = this.top();
    return top ? [code(top === 'object' ? '}' : ']')] : [];
  }

  /**
   * Bytes that lead to a complete text soonest from here, most direct first. The matcher
   * takes the first one the grammar accepts (a schema may insist on a key or a digit).
   */
  closingPreferences(): number[] {
    switch (this.scalar) {
      case 'string':
      case 'key':
        return this.escaped ? [code('n')] : [QUOTE];
      case 'number':
        // Inside a container a comma ends the number too, when the closer is refused (an
        // array still short of its minItems): without it the matcher would scan its
        // fallback bytes for one on every item of such an array.
        return this.top() ? [...this.closer(), code(','), code('0')] : [code('0')];
      case 'literal':
        return []; // the rest of true/false/null is forced
    }
    switch (this.expecting) {
      case 'value':
        return VALUE_STARTS;
      case 'value-or-close':
        return [code(']'), ...VALUE_STARTS];
      case 'key-or-close':
        return [code('}'), QUOTE];
      case 'key':
        return [QUOTE];
      case 'colon':
        return [code(':')];
      case 'comma-or-close':
        return [...this.closer(), code(',')];
      case 'end':
        return [];
    }
  }
}
