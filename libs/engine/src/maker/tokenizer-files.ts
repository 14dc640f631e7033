import { bytesToUnicode, learnMerges, learnPieceMerges, SPACE_MARK } from './bpe';
import { GEMMA3_CHAT_TEMPLATE } from './chat-templates';
import { CORPUS } from './corpus';

/**
 * A ChatML template with tools, in the style of SmolLM2 / Qwen2.5: tools are described in the
 * system turn, calls come back as <tool_call> JSON blocks, tool results get their own turn.
 */
export const CHAT_TEMPLATE = `{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- '# Tools\\n\\nYou may call one or more functions to help with the request. Their signatures are inside <tools></tools>:\\n<tools>' }}
    {%- for tool in tools %}
        {{- '\\n' + (tool | tojson) }}
    {%- endfor %}
    {{- '\\n</tools>\\n\\nTo call a function, answer with a JSON object {"name": <function-name>, "arguments": <args-json-object>} inside <tool_call></tool_call> tags.<|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'system' and loop.first %}
    {%- elif message.role == 'assistant' and message.tool_calls %}
        {{- '<|im_start|>assistant' }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for call in message.tool_calls %}
            {%- if call.function is defined %}
                {%- set call = call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' + call.name + '", "arguments": ' + (call.arguments | tojson) + '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == 'tool' %}
        {{- '<|im_start|>tool\\n' + message.content + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}`;

/** Ids 0..2, as in SmolLM2. */
export const SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;
export const BOS_ID = 1;
export const EOS_ID = 2;

export interface TokenizerFiles {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  /** Merges learned from the corpus (the rest of the vocabulary, if any, is reserved filler). */
  learnedMerges: number;
  bosId: number;
  /** The ids that end generation; the first ends a chat turn. */
  eosIds: number[];
  /** The ids of the 256 byte tokens: [first, first + 256). */
  firstByteId: number;
}

/** A family's chat template and the tokens it adds to the vocabulary (at its end, not special, as Qwen3 has them). */
export interface ChatFormat {
  chatTemplate: string;
  addedTokens: readonly string[];
}

/** The tiny presets' ChatML. */
export const CHATML_FORMAT: ChatFormat = { chatTemplate: CHAT_TEMPLATE, addedTokens: [] };

/**
 * A byte-level BPE tokenizer of exactly `vocabSize` ids: specials, the 256 byte symbols,
 * merges learned from the embedded corpus, then reserved tokens when the corpus runs out
 * of merges (they keep the shapes of a big vocabulary for benchmarks), then the chat
 * format's own tokens.
 */
export function makeTokenizerFiles(vocabSize: number, maxLength: number, format: ChatFormat = CHATML_FORMAT): TokenizerFiles {
  const base = SPECIAL_TOKENS.length + 256 + format.addedTokens.length;
  if (vocabSize < base) throw new Error(`vocab size ${vocabSize} is below the ${base} specials, byte symbols and chat tokens`);
  const merges = learnMerges(CORPUS, vocabSize - base, [...SPECIAL_TOKENS]);
  const vocab: Record<string, number> = {};
  let next = 0;
  for (const t of SPECIAL_TOKENS) vocab[t] = next++;
  for (const ch of [...bytesToUnicode()].sort()) vocab[ch] = next++;
  for (const [a, b] of merges) if (vocab[a + b] === undefined) vocab[a + b] = next++;
  for (let i = 0; next < vocabSize - format.addedTokens.length; i++) vocab[`<|reserved_${i}|>`] = next++;
  const formatTokens = format.addedTokens.map((content) => {
    vocab[content] = next;
    return { id: next++, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false };
  });

  const byteLevel = { add_prefix_space: false, trim_offsets: true, use_regex: true };
  const added = SPECIAL_TOKENS.map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [...added, ...formatTokens],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', ...byteLevel },
    post_processor: { type: 'ByteLevel', ...byteLevel, trim_offsets: false },
    decoder: { type: 'ByteLevel', ...byteLevel },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const tokenizerConfig = {
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries([...added, ...formatTokens].map(({ id, ...t }) => [String(id), t])),
    additional_special_tokens: ['<|im_start|>', '<|im_end|>'],
    bos_token: '<|im_start|>',
    chat_template: format.chatTemplate,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    model_max_length: maxLength,
    pad_token: '<|im_end|>',
    tokenizer_class: 'GPT2Tokenizer',
    unk_token: '<|endoftext|>',
    vocab_size: vocabSize,
  };
  return { tokenizerJson, tokenizerConfig, learnedMerges: merges.length, bosId: BOS_ID, eosIds: [EOS_ID], firstByteId: SPECIAL_TOKENS.length };
}

/** Gemma's special tokens first (its pad, eos, bos and unk ids), then its turn markers. */
export const GEMMA_SPECIAL_TOKENS = ['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', '<end_of_turn>'] as const;

/** The 256 byte tokens of a byte-fallback vocabulary: <0x00> ... <0xFF>. */
export function byteTokens(): string[] {
  return Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
}

/**
 * A SentencePiece-style BPE tokenizer.json of exactly `vocabSize` ids, as Gemma's is laid out:
 * spaces normalized to U+2581, merges over characters (learned from the corpus), and byte
 * fallback, so that a character outside the vocabulary becomes its UTF-8 bytes' <0xNN> tokens
 * (decoded back by the ByteFallback and Fuse decoders); specials, the byte tokens, the corpus's
 * characters, the merges, then reserved filler.
 */
export function makeByteFallbackTokenizerFiles(vocabSize: number, maxLength: number): TokenizerFiles {
  const bytes = byteTokens();
  const specials = [...GEMMA_SPECIAL_TOKENS];
  const text = CORPUS.replaceAll(' ', SPACE_MARK);
  const characters = [...new Set(text)].sort();
  const base = specials.length + bytes.length + characters.length;
  if (vocabSize < base) throw new Error(`vocab size ${vocabSize} is below the ${base} specials, byte tokens and characters`);
  const merges = learnPieceMerges(CORPUS, vocabSize - base, specials);
  const vocab: Record<string, number> = {};
  let next = 0;
  for (const t of [...specials, ...bytes, ...characters]) vocab[t] = next++;
  for (const [a, b] of merges) if (vocab[a + b] === undefined) vocab[a + b] = next++;
  for (let i = 0; next < vocabSize; i++) vocab[`<unused${i}>`] = next++;

  const added = specials.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  const bos = { id: '<bos>', type_id: 0 };
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'Replace', pattern: { String: ' ' }, content: SPACE_MARK },
    pre_tokenizer: null,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: bos }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: bos }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '<bos>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<bos>': { id: '<bos>', ids: [vocab['<bos>']], tokens: ['<bos>'] } },
    },
    decoder: {
      type: 'Sequence',
      decoders: [{ type: 'Replace', pattern: { String: SPACE_MARK }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const tokenizerConfig = {
    add_bos_token: true,
    add_eos_token: false,
    added_tokens_decoder: Object.fromEntries(added.map(({ id, ...t }) => [String(id), t])),
    additional_special_tokens: ['<start_of_turn>', '<end_of_turn>'],
    bos_token: '<bos>',
    chat_template: GEMMA3_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: '<eos>',
    model_max_length: maxLength,
    pad_token: '<pad>',
    spaces_between_special_tokens: false,
    tokenizer_class: 'GemmaTokenizer',
    unk_token: '<unk>',
    use_default_system_prompt: false,
  };
  const id = (t: string) => vocab[t];
  return {
    tokenizerJson,
    tokenizerConfig,
    learnedMerges: merges.length,
    bosId: id('<bos>'),
    eosIds: [id('<end_of_turn>'), id('<eos>')],
    firstByteId: id('<0x00>'),
  };
}
