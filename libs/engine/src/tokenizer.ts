import { Tokenizer } from '@huggingface/tokenizers';

/**
 * The model's own tokenizer (tokenizer.json + tokenizer_config.json) run by
 * @huggingface/tokenizers. A thin wrapper: names the options the engine needs and the
 * special tokens the sampler and chat template need.
 */
export class TextTokenizer {
  private readonly tokenizer: Tokenizer;
  private readonly specialIds: Set<number>;
  readonly vocabSize: number;

  constructor(
    tokenizerJson: Record<string, unknown>,
    readonly tokenizerConfig: Record<string, unknown>,
  ) {
    this.tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
    const added = this.tokenizer.get_added_tokens_decoder();
    this.specialIds = new Set([...added.entries()].filter(([, t]) => t.special).map(([id]) => id));
    // A loop, not Math.max(...ids): a vocabulary of 151,936 ids (Qwen2.5) as spread arguments
    // overflows the call stack.
    let largest = -1;
    for (const id of this.tokenizer.get_vocab(true).values()) largest = Math.max(largest, id);
    this.vocabSize = largest + 1;
  }

  /** Plain text to ids; chat prompts already contain their special tokens, so none are added by default. */
  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: options.addSpecialTokens ?? false }).ids;
  }

  decode(ids: number[], options: { skipSpecialTokens?: boolean } = {}): string {
    return this.tokenizer.decode(ids, { skip_special_tokens: options.skipSpecialTokens ?? true });
  }

  tokenToId(token: string): number | undefined {
    return this.tokenizer.token_to_id(token);
  }

  idToToken(id: number): string | undefined {
    return this.tokenizer.id_to_token(id);
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  /** A special token named in tokenizer_config.json (bos_token, eos_token, pad_token...). */
  specialToken(key: 'bos_token' | 'eos_token' | 'pad_token' | 'unk_token'): string | null {
    const value = this.tokenizerConfig[key];
    if (typeof value === 'string') return value;
    if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
      return (value as { content: string }).content;
    }
    return null;
  }

  /** Vocabulary as token strings by id (for grammar engines that need the byte strings). */
  vocabulary(): string[] {
    const out: string[] = new Array(this.vocabSize).fill('');
    for (const [token, id] of this.tokenizer.get_vocab(true)) out[id] = token;
    return out;
  }
}

/**
 * Turns a growing list of generated ids into text deltas. Decoding each token alone breaks
 * multi-byte characters and byte-level spaces, so the whole tail is re-decoded and a delta
 * is held back while it ends in an incomplete UTF-8 sequence.
 */
export class IncrementalDecoder {
  private ids: number[] = [];
  private emitted = '';

  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly skipSpecialTokens = true,
  ) {}

  push(id: number): string {
    this.ids.push(id);
    const text = this.tokenizer.decode(this.ids, { skipSpecialTokens: this.skipSpecialTokens });
    if (text.endsWith('\uFFFD') || !text.startsWith(this.emitted)) return '';
    const delta = text.slice(this.emitted.length);
    this.emitted = text;
    return delta;
  }

  /** Whatever is still held back, at the end of generation. */
  flush(): string {
    const text = this.tokenizer.decode(this.ids, { skipSpecialTokens: this.skipSpecialTokens });
    const delta = text.startsWith(this.emitted) ? text.slice(this.emitted.length) : '';
    this.emitted = text;
    return delta;
  }

  get text(): string {
    return this.emitted;
  }
}
