/**
 * Learning BPE merges (byte-level, or SentencePiece-style over characters) for the model
 * maker: data preparation that produces a tokenizer.json, never used to tokenize at runtime
 * (that is @huggingface/tokenizers' job).
 * Deterministic: ties between equally frequent pairs go to the lexicographically smaller pair.
 */

/** GPT-2's reversible map from bytes to printable characters, so every token is a visible string. */
export function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const map: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    map[b] = printable.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  }
  return map;
}

/** The GPT-2 pre-tokenization pattern, the same one the ByteLevel pre-tokenizer applies. */
const PRETOKENIZE = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/** Byte-level BPE merges (GPT-2's): over each pre-tokenized piece's bytes, as bytesToUnicode's characters. */
export function learnMerges(text: string, maxMerges: number, exclude: string[] = []): [string, string][] {
  const byteChar = bytesToUnicode();
  const encoder = new TextEncoder();
  const pieces = withoutTokens(text, exclude).match(PRETOKENIZE) ?? [];
  return mergeWords(
    pieces.map((piece) => Array.from(encoder.encode(piece), (b) => byteChar[b])),
    maxMerges,
  );
}

/** SentencePiece's word boundary mark, which stands for a space. */
export const SPACE_MARK = '\u2581';

/**
 * SentencePiece-style BPE merges: over the characters of words, each space turned into
 * SPACE_MARK and kept at the start of the word after it, so that no merge crosses a word
 * boundary (as SentencePiece trains with split_by_whitespace).
 */
export function learnPieceMerges(text: string, maxMerges: number, exclude: string[] = []): [string, string][] {
  const words = withoutTokens(text, exclude).replaceAll(' ', SPACE_MARK).split(new RegExp(`(?=${SPACE_MARK})|(?<=\\n)|(?=\\n)`, 'u'));
  return mergeWords(
    words.filter((w) => w.length > 0).map((w) => [...w]),
    maxMerges,
  );
}

function withoutTokens(text: string, tokens: string[]): string {
  let cleaned = text;
  for (const token of tokens) cleaned = cleaned.split(token).join(' ');
  return cleaned;
}

/** The most frequent adjacent pair merged, again and again, over words given as their symbols. */
function mergeWords(symbolWords: string[][], maxMerges: number): [string, string][] {
  const counts = new Map<string, number>();
  for (const symbols of symbolWords) {
    const word = symbols.join('\u0000');
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  const words = [...counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([w, n]) => ({ symbols: w.split('\u0000'), n }));

  const merges: [string, string][] = [];
  while (merges.length < maxMerges) {
    const pairs = new Map<string, number>();
    for (const { symbols, n } of words) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = symbols[i] + '\u0000' + symbols[i + 1];
        pairs.set(key, (pairs.get(key) ?? 0) + n);
      }
    }
    let best: string | null = null;
    let bestCount = 1; // a pair seen once is not worth a token
    for (const [key, n] of pairs) {
      if (n > bestCount || (n === bestCount && best !== null && key < best)) {
        best = key;
        bestCount = n;
      }
    }
    if (best === null) break;
    const [left, right] = best.split('\u0000') as [string, string];
    merges.push([left, right]);
    for (const word of words) {
      const s = word.symbols;
      const merged: string[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === left && s[i + 1] === right) {
          merged.push(left + right);
          i++;
        } else {
          merged.push(s[i]);
        }
      }
      word.symbols = merged;
    }
  }
  return merges;
}
