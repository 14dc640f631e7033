/**
 * Learning byte-level BPE merges for the model maker: data preparation that produces a
 * tokenizer.json, never used to tokenize at runtime (that is @huggingface/tokenizers' job).
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

export function learnMerges(text: string, maxMerges: number, exclude: string[] = []): [string, string][] {
  const byteChar = bytesToUnicode();
  const encoder = new TextEncoder();
  let cleaned = text;
  for (const token of exclude) cleaned = cleaned.split(token).join(' ');

  const counts = new Map<string, number>();
  for (const piece of cleaned.match(PRETOKENIZE) ?? []) {
    const word = Array.from(encoder.encode(piece), (b) => byteChar[b]).join('\u0000');
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
