import { bytesToUnicode } from '../maker/bpe';
import type { TextTokenizer } from '../tokenizer';

/**
 * The tokenizer's vocabulary as bytes, the form a grammar engine reasons in.
 *
 * Byte-level BPE stores every token as printable characters standing for bytes (GPT-2's map:
 * "Ġ" is a space). xgrammar's BYTE_LEVEL mode decodes that form itself, so it gets the strings
 * in id order, with two adjustments:
 * - special tokens (<|im_start|>, <|endoftext|>...) become "", which xgrammar treats as
 *   never allowed; without this "<|im_start|>" would decode to its literal characters and be
 *   allowed inside a JSON string;
 * - added tokens stored as raw text (not in the byte alphabet, e.g. containing a space) are
 *   re-encoded into the byte alphabet so they decode to what the tokenizer would print;
 * - tokens holding a byte that never occurs in UTF-8 (C0, C1, F5-FF) become "" too: xgrammar
 *   takes C1 A0 for a character, which would put U+FFFD into the text in its place and break
 *   a schema's maxLength.
 */
export class ByteVocabulary {
  /** Strings for TokenizerInfo.createTokenizerInfo(encoded, 'BYTE_LEVEL', ...), by id. */
  readonly encoded: string[];
  /** The token made of exactly that one byte, per byte value; -1 when the vocabulary lacks it. */
  readonly byteTokenIds: Int32Array;
  /** How many bytes each token adds to the text, and the most any token adds. */
  readonly byteLengths: Uint16Array;
  readonly longestToken: number;
  private readonly bytesById = new Map<number, Uint8Array>();
  private readonly charToByte: Map<string, number>;
  private readonly utf8 = new TextDecoder('utf-8', { fatal: true });
  private readonly walkTokens = new Map<string, number[]>();

  constructor(private readonly tokenizer: TextTokenizer) {
    const byteChars = bytesToUnicode();
    this.charToByte = new Map(byteChars.map((ch, b) => [ch, b]));
    this.encoded = tokenizer.vocabulary().map((token, id) => {
      if (tokenizer.isSpecial(id)) return '';
      const encoded = [...token].every((ch) => this.charToByte.has(ch)) ? token : Array.from(Buffer.from(token, 'utf8'), (b) => byteChars[b]).join('');
      return [...encoded].some((ch) => neverInUtf8(this.charToByte.get(ch) as number)) ? '' : encoded;
    });
    this.byteLengths = Uint16Array.from(this.encoded, (token) => [...token].length);
    this.longestToken = this.byteLengths.reduce((a, b) => Math.max(a, b), 0);
    this.byteTokenIds = new Int32Array(256).fill(-1);
    for (let b = 0; b < 256; b++) {
      if (neverInUtf8(b)) continue;
      const id = tokenizer.tokenToId(byteChars[b]);
      if (id !== undefined && this.encoded[id] === byteChars[b]) this.byteTokenIds[b] = id;
    }
  }

  get size(): number {
    return this.encoded.length;
  }

  /**
   * Tokens spelling these bytes: the tokenizer's own encoding when they are whole UTF-8 text
   * (usually fewer tokens), one token per byte otherwise. Any split is accepted by a grammar,
   * which matches bytes, not tokenizations.
   */
  tokensFor(bytes: number[]): number[] {
    // Closing walks repeat ("}, "]}...) and encoding costs more than the grammar walk.
    const key = String.fromCharCode(...bytes);
    let ids = this.walkTokens.get(key);
    if (!ids) {
      if (this.walkTokens.size >= 4096) this.walkTokens.clear();
      ids = this.encodeBytes(bytes);
      this.walkTokens.set(key, ids);
    }
    return ids;
  }

  private encodeBytes(bytes: number[]): number[] {
    let text: string | null = null;
    try {
      text = this.utf8.decode(Uint8Array.from(bytes));
    } catch {
      // ends inside a multi-byte character
    }
    const ids = text === null ? [] : this.tokenizer.encode(text);
    return ids.length > 0 && ids.every((id) => !this.tokenizer.isSpecial(id)) ? ids : bytes.map((b) => this.byteTokenIds[b]);
  }

  /** The bytes a token adds to the text (none for special tokens). */
  bytes(id: number): Uint8Array {
    let bytes = this.bytesById.get(id);
    if (!bytes) {
      bytes = Uint8Array.from([...(this.encoded[id] ?? '')], (ch) => this.charToByte.get(ch) ?? 0);
      this.bytesById.set(id, bytes);
    }
    return bytes;
  }
}

function neverInUtf8(byte: number): boolean {
  return byte === 0xc0 || byte === 0xc1 || byte >= 0xf5;
}
