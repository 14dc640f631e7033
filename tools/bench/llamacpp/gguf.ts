/**
 * Writes a checkpoint of the llama, qwen3 or gemma3_text family (config.json, model.safetensors
 * or its shards, tokenizer.json) as a GGUF file (version 3) that llama.cpp loads, with its
 * projections in f32, bf16 or Q8_0, so that llama.cpp can run the engine's own bench models as a
 * peer (or in bf16, from a checkpoint stored in bf16). Written from the GGUF format's
 * description (ggml's docs/gguf.md): a header, key-value metadata, tensor infos, then the
 * tensors, each at a 32-byte aligned offset; the tensors are read and written one at a time, so
 * a 1B model in f32 is never held whole.
 *
 * What llama.cpp's own converter (convert_hf_to_gguf.py) does per family, done here too:
 * - llama: q_proj and k_proj rows reordered per head from Hugging Face's rotate-half RoPE
 *   layout to llama.cpp's interleaved pairs; Llama 3's rope_scaling written as the
 *   rope_freqs tensor, the divisor of each RoPE frequency.
 * - qwen3 and gemma3 rotate halves in llama.cpp too (its NEOX RoPE): rows stay as they are;
 *   q_norm and k_norm become attn_q_norm and attn_k_norm, and head_dim key_length.
 * - gemma3: its norms scale by 1 + w, and llama.cpp's by w, so every norm weight is written
 *   plus one; the four norms a layer; the sliding window's size. llama.cpp fixes the rest of
 *   Gemma 3 itself (every sixth layer global, a local RoPE base of 10000, attention scaled by
 *   head_dim^-0.5, embeddings by sqrt(hidden)), so a checkpoint that differs is refused.
 * Tied embeddings: token_embd serves as the output layer, except with Q8_0, where the output
 * is written apart in Q8_0 as the engine's q8 holds its lm_head (and llama.cpp's converter
 * quantizes token_embd itself), while the embeddings stay f32 as the engine looks them up.
 * Norms stay f32.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ModelConfig, parseModelConfig } from '../../../libs/engine/src/config';
import { f32ToBf16, f32ToF16 } from '../../../libs/engine/src/dtype';
import { Checkpoint } from '../../../libs/engine/src/safetensors';

export type GgufWeights = 'f32' | 'bf16' | 'q8_0';

const ALIGNMENT = 32;
/** ggml_type values (ggml.h). */
const GGML_F32 = 0;
const GGML_Q8_0 = 8;
const GGML_BF16 = 30;
const Q8_BLOCK = 32;
/** gguf_type values. */
const enum Kind {
  U32 = 4,
  I32 = 5,
  F32 = 6,
  STRING = 8,
  ARRAY = 9,
}

type Value = { kind: Kind.U32 | Kind.I32 | Kind.F32; value: number } | { kind: Kind.STRING; value: string } | { kind: Kind.ARRAY; of: Kind.STRING | Kind.I32 | Kind.F32; values: (string | number)[] };

/** A tensor to write: its info now, its bytes when the data section is written. */
interface Tensor {
  name: string;
  /** ne0 (the contiguous axis) first: [in, out] for a Hugging Face [out, in] weight. */
  dims: number[];
  type: number;
  bytes: number;
  data: () => Uint8Array;
}

/** Appends little-endian values to growing chunks. */
class Writer {
  readonly chunks: Uint8Array[] = [];
  length = 0;

  bytes(b: Uint8Array): void {
    this.chunks.push(b);
    this.length += b.length;
  }

  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.bytes(b);
  }

  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.bytes(b);
  }

  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.bytes(b);
  }

  f32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.bytes(b);
  }

  string(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.bytes(b);
  }

  value(v: Value): void {
    this.u32(v.kind);
    if (v.kind === Kind.STRING) this.string(v.value);
    else if (v.kind === Kind.ARRAY) {
      this.u32(v.of);
      this.u64(v.values.length);
      for (const x of v.values) {
        if (v.of === Kind.STRING) this.string(x as string);
        else if (v.of === Kind.F32) this.f32(x as number);
        else this.i32(x as number);
      }
    } else if (v.kind === Kind.F32) this.f32(v.value);
    else if (v.kind === Kind.I32) this.i32(v.value);
    else this.u32(v.value);
  }

  pad(): void {
    const extra = (ALIGNMENT - (this.length % ALIGNMENT)) % ALIGNMENT;
    if (extra) this.bytes(new Uint8Array(extra));
  }
}

/** Rows of each head from rotate-half order (h, half, i) to interleaved pairs (h, i, half): llama.cpp's RoPE layout. */
function interleaveHeads(w: Float32Array, rows: number, cols: number, heads: number): Float32Array {
  const out = new Float32Array(w.length);
  const hd = rows / heads;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < hd / 2; i++) {
      for (let j = 0; j < 2; j++) {
        const from = h * hd + j * (hd / 2) + i;
        const to = h * hd + 2 * i + j;
        out.set(w.subarray(from * cols, (from + 1) * cols), to * cols);
      }
    }
  }
  return out;
}

/** Q8_0: per block of 32 along each row, an f16 scale d = max|x| / 127 and 32 int8 round(x / d). */
function quantizeQ8(w: Float32Array): Uint8Array {
  const blocks = w.length / Q8_BLOCK;
  const out = new Uint8Array(blocks * (2 + Q8_BLOCK));
  const view = new DataView(out.buffer);
  for (let b = 0; b < blocks; b++) {
    const x = w.subarray(b * Q8_BLOCK, (b + 1) * Q8_BLOCK);
    let amax = 0;
    for (const v of x) amax = Math.max(amax, Math.abs(v));
    const d = amax / 127;
    const at = b * (2 + Q8_BLOCK);
    view.setUint16(at, f32ToF16(Float32Array.of(d))[0], true);
    for (let i = 0; i < Q8_BLOCK; i++) view.setInt8(at + 2 + i, d === 0 ? 0 : Math.round(x[i] / d));
  }
  return out;
}

const f32Bytes = (w: Float32Array) => new Uint8Array(w.buffer, w.byteOffset, w.byteLength);

/** The top 16 bits of each float (rounded to nearest even): exact for a checkpoint stored in bf16. */
function bf16Bytes(w: Float32Array): Uint8Array {
  const halves = f32ToBf16(w);
  return new Uint8Array(halves.buffer, halves.byteOffset, halves.byteLength);
}

/** llama.cpp's name of each family's architecture. */
const ARCHITECTURE: Partial<Record<ModelConfig['modelType'], string>> = { llama: 'llama', qwen3: 'qwen3', gemma3_text: 'gemma3' };

/** Why llama.cpp cannot run this config as the checkpoint means it, or null. */
function unsupported(config: ModelConfig): string | null {
  if (!ARCHITECTURE[config.modelType]) return `architecture ${config.modelType} (llama, qwen3 and gemma3_text are written)`;
  if (config.qkvBias || config.oBias) return 'attention biases';
  if (config.ropeScaling && !(config.modelType === 'llama' && config.ropeScaling.type === 'llama3')) return `${config.ropeScaling.type} RoPE scaling on ${config.modelType}`;
  if (config.modelType === 'gemma3_text') {
    const w = config.slidingWindow;
    if (config.queryPreAttnScalar !== config.headDim) return `query_pre_attn_scalar ${config.queryPreAttnScalar} (llama.cpp scales Gemma 3's attention by head_dim ${config.headDim})`;
    if (!w || w.ropeTheta !== 10000 || w.layers.some((sliding, i) => sliding !== ((i + 1) % 6 !== 0))) {
      return "a sliding-window pattern other than Gemma 3's (five windowed layers then a global one, local RoPE base 10000), which llama.cpp fixes";
    }
  }
  return null;
}

/**
 * Llama 3's rope_scaling as llama.cpp's converter writes it: per frequency of
 * theta^(-2i/d), the number llama.cpp divides it by (1 for short wavelengths, factor for long
 * ones, and a smooth blend between; Meta's apply_scaling).
 */
export function llama3RopeFactors(config: ModelConfig): Float32Array {
  const s = config.ropeScaling;
  if (s?.type !== 'llama3') throw new Error('llama3RopeFactors: no llama3 rope_scaling');
  const d = config.headDim;
  const lowFreqWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
  const highFreqWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
  const factors = new Float32Array(d / 2);
  for (let i = 0; i < d / 2; i++) {
    const freq = 1 / Math.pow(config.ropeTheta, (2 * i) / d);
    const wavelen = (2 * Math.PI) / freq;
    if (wavelen < highFreqWavelen) factors[i] = 1;
    else if (wavelen > lowFreqWavelen) factors[i] = s.factor;
    else {
      const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      factors[i] = 1 / ((1 - smooth) / s.factor + smooth);
    }
  }
  return factors;
}

interface TokenizerJson {
  model: { type?: string; vocab: Record<string, number>; merges: (string | [string, string])[]; byte_fallback?: boolean; unk_token?: string | null };
  added_tokens: { id: number; content: string; special: boolean }[];
}

/**
 * The vocabulary as GGUF metadata: byte-level BPE as gpt2's; a byte-fallback vocabulary
 * (Gemma's) as SentencePiece's ('llama'), with its <0xNN> tokens typed as bytes and scores
 * that rank the pieces in vocabulary order, as llama.cpp's SentencePiece tokenizer needs.
 */
function vocabulary(tokenizer: TokenizerJson, config: ModelConfig): [string, Value][] {
  const tokens = Object.entries(tokenizer.model.vocab)
    .sort((a, b) => a[1] - b[1])
    .map(([token]) => token);
  const special = new Set(tokenizer.added_tokens.filter((t) => t.special).map((t) => t.id));
  const ids: [string, Value][] = [
    ['tokenizer.ggml.bos_token_id', { kind: Kind.U32, value: config.bosTokenId ?? 1 }],
    ['tokenizer.ggml.eos_token_id', { kind: Kind.U32, value: config.eosTokenIds[0] ?? 2 }],
  ];
  if (tokenizer.model.byte_fallback) {
    const unk = tokenizer.model.unk_token ? tokenizer.model.vocab[tokenizer.model.unk_token] : undefined;
    // llama_token_type: 1 normal, 2 unknown, 3 control, 6 byte.
    const type = (token: string, id: number) => (id === unk ? 2 : special.has(id) ? 3 : /^<0x[0-9A-F]{2}>$/.test(token) ? 6 : 1);
    return [
      ['tokenizer.ggml.model', { kind: Kind.STRING, value: 'llama' }],
      ['tokenizer.ggml.tokens', { kind: Kind.ARRAY, of: Kind.STRING, values: tokens }],
      ['tokenizer.ggml.scores', { kind: Kind.ARRAY, of: Kind.F32, values: tokens.map((_, id) => -id) }],
      ['tokenizer.ggml.token_type', { kind: Kind.ARRAY, of: Kind.I32, values: tokens.map(type) }],
      ...ids,
      ...(unk === undefined ? [] : ([['tokenizer.ggml.unknown_token_id', { kind: Kind.U32, value: unk }]] as [string, Value][])),
    ];
  }
  return [
    ['tokenizer.ggml.model', { kind: Kind.STRING, value: 'gpt2' }],
    ['tokenizer.ggml.pre', { kind: Kind.STRING, value: 'default' }],
    ['tokenizer.ggml.tokens', { kind: Kind.ARRAY, of: Kind.STRING, values: tokens }],
    // 1 normal, 3 control (llama_token_type).
    ['tokenizer.ggml.token_type', { kind: Kind.ARRAY, of: Kind.I32, values: tokens.map((_, id) => (special.has(id) ? 3 : 1)) }],
    ['tokenizer.ggml.merges', { kind: Kind.ARRAY, of: Kind.STRING, values: tokenizer.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m)) }],
    ...ids,
  ];
}

/** Writes `dir`'s checkpoint to `out` as GGUF with projections in `weights`; returns out. */
export function writeGguf(dir: string, out: string, weights: GgufWeights): string {
  const config = parseModelConfig(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')));
  const why = unsupported(config);
  if (why) throw new Error(`writeGguf: llama.cpp cannot run ${dir} as written: ${why}`);
  const arch = ARCHITECTURE[config.modelType] as string;
  const gemma = config.modelType === 'gemma3_text';
  const tokenizer = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')) as TokenizerJson;
  const checkpoint = new Checkpoint(dir);
  const tensors: Tensor[] = [];
  try {
    /** `from` as `name`: a projection (quantized to `weights`), or a norm or embedding (f32; a Gemma norm plus one). */
    const add = (name: string, from: string, kind: 'projection' | 'norm' | 'embedding', heads = 0) => {
      const shape = checkpoint.shapeOf(from);
      const [rows, cols] = shape.length === 2 ? shape : [1, shape[0]];
      const dims = shape.length === 2 ? [cols, rows] : [cols];
      const count = rows * cols;
      const read = () => {
        const data = checkpoint.read(from).data;
        if (kind === 'norm' && gemma) return data.map((w) => w + 1);
        return heads ? interleaveHeads(data, rows, cols, heads) : data;
      };
      if (kind === 'projection' && weights === 'q8_0' && cols % Q8_BLOCK === 0) tensors.push({ name, dims, type: GGML_Q8_0, bytes: (count / Q8_BLOCK) * (2 + Q8_BLOCK), data: () => quantizeQ8(read()) });
      else if (kind === 'projection' && weights === 'bf16') tensors.push({ name, dims, type: GGML_BF16, bytes: count * 2, data: () => bf16Bytes(read()) });
      else tensors.push({ name, dims, type: GGML_F32, bytes: count * 4, data: () => f32Bytes(read()) });
    };
    // llama.cpp's llama rotates interleaved pairs; its qwen3 and gemma3 rotate halves, as Hugging Face does.
    const interleave = config.modelType === 'llama';
    add('token_embd.weight', 'model.embed_tokens.weight', 'embedding');
    for (let l = 0; l < config.numLayers; l++) {
      const p = `model.layers.${l}`;
      add(`blk.${l}.attn_norm.weight`, `${p}.input_layernorm.weight`, 'norm');
      add(`blk.${l}.attn_q.weight`, `${p}.self_attn.q_proj.weight`, 'projection', interleave ? config.numHeads : 0);
      add(`blk.${l}.attn_k.weight`, `${p}.self_attn.k_proj.weight`, 'projection', interleave ? config.numKvHeads : 0);
      add(`blk.${l}.attn_v.weight`, `${p}.self_attn.v_proj.weight`, 'projection');
      add(`blk.${l}.attn_output.weight`, `${p}.self_attn.o_proj.weight`, 'projection');
      if (config.qkNorm) {
        add(`blk.${l}.attn_q_norm.weight`, `${p}.self_attn.q_norm.weight`, 'norm');
        add(`blk.${l}.attn_k_norm.weight`, `${p}.self_attn.k_norm.weight`, 'norm');
      }
      if (config.sandwichNorms) {
        add(`blk.${l}.post_attention_norm.weight`, `${p}.post_attention_layernorm.weight`, 'norm');
        add(`blk.${l}.ffn_norm.weight`, `${p}.pre_feedforward_layernorm.weight`, 'norm');
        add(`blk.${l}.post_ffw_norm.weight`, `${p}.post_feedforward_layernorm.weight`, 'norm');
      } else {
        add(`blk.${l}.ffn_norm.weight`, `${p}.post_attention_layernorm.weight`, 'norm');
      }
      add(`blk.${l}.ffn_gate.weight`, `${p}.mlp.gate_proj.weight`, 'projection');
      add(`blk.${l}.ffn_up.weight`, `${p}.mlp.up_proj.weight`, 'projection');
      add(`blk.${l}.ffn_down.weight`, `${p}.mlp.down_proj.weight`, 'projection');
    }
    add('output_norm.weight', 'model.norm.weight', 'norm');
    if (!config.tieWordEmbeddings) add('output.weight', 'lm_head.weight', 'projection');
    else if (weights === 'q8_0') add('output.weight', 'model.embed_tokens.weight', 'projection');
    if (config.ropeScaling?.type === 'llama3') {
      const factors = llama3RopeFactors(config);
      tensors.push({ name: 'rope_freqs.weight', dims: [factors.length], type: GGML_F32, bytes: factors.byteLength, data: () => f32Bytes(factors) });
    }

    const u32 = (value: number): Value => ({ kind: Kind.U32, value });
    const metadata: [string, Value][] = [
      ['general.architecture', { kind: Kind.STRING, value: arch }],
      ['general.name', { kind: Kind.STRING, value: path.basename(dir) }],
      ['general.alignment', u32(ALIGNMENT)],
      [`${arch}.context_length`, u32(config.maxPositionEmbeddings)],
      [`${arch}.embedding_length`, u32(config.hiddenSize)],
      [`${arch}.block_count`, u32(config.numLayers)],
      [`${arch}.feed_forward_length`, u32(config.intermediateSize)],
      [`${arch}.attention.head_count`, u32(config.numHeads)],
      [`${arch}.attention.head_count_kv`, u32(config.numKvHeads)],
      [`${arch}.attention.key_length`, u32(config.headDim)],
      [`${arch}.attention.value_length`, u32(config.headDim)],
      [`${arch}.attention.layer_norm_rms_epsilon`, { kind: Kind.F32, value: config.rmsNormEps }],
      [`${arch}.rope.freq_base`, { kind: Kind.F32, value: config.ropeTheta }],
      [`${arch}.rope.dimension_count`, u32(config.headDim)],
      [`${arch}.vocab_size`, u32(config.vocabSize)],
      ...(gemma ? ([[`${arch}.attention.sliding_window`, u32(config.slidingWindow?.size ?? 0)]] as [string, Value][]) : []),
      ...vocabulary(tokenizer, config),
    ];
    writeFile(out, metadata, tensors);
  } finally {
    checkpoint.close();
  }
  return out;
}

/** The header, metadata and tensor infos, then each tensor's bytes as it is made, 32-byte aligned. */
function writeFile(out: string, metadata: [string, Value][], tensors: Tensor[]): void {
  const w = new Writer();
  w.bytes(Buffer.from('GGUF', 'ascii'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(metadata.length);
  for (const [key, value] of metadata) {
    w.string(key);
    w.value(value);
  }
  let offset = 0;
  for (const t of tensors) {
    w.string(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.type);
    w.u64(offset);
    offset += Math.ceil(t.bytes / ALIGNMENT) * ALIGNMENT;
  }
  w.pad();
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const fd = fs.openSync(out, 'w');
  try {
    for (const chunk of w.chunks) fs.writeSync(fd, chunk);
    for (const t of tensors) {
      const data = t.data();
      if (data.length !== t.bytes) throw new Error(`writeGguf: ${t.name} has ${data.length} bytes, not ${t.bytes}`);
      fs.writeSync(fd, data);
      const extra = (ALIGNMENT - (data.length % ALIGNMENT)) % ALIGNMENT;
      if (extra) fs.writeSync(fd, new Uint8Array(extra));
    }
  } finally {
    fs.closeSync(fd);
  }
}
