/**
 * Writes a Llama checkpoint (config.json, model.safetensors, tokenizer.json) as a GGUF file
 * (version 3) that llama.cpp loads, with its projections in f32, bf16 or Q8_0, so that llama.cpp can
 * run the engine's own bench model as a peer (or in bf16, from a checkpoint stored in bf16). Written from the GGUF format's description
 * (ggml's docs/gguf.md): a header, key-value metadata, tensor infos, then the tensors, each
 * at a 32-byte aligned offset.
 *
 * As llama.cpp's converter does for the llama architecture, q_proj and k_proj rows are
 * reordered per head from Hugging Face's rotate-half RoPE layout to llama.cpp's interleaved
 * pairs; the lm_head is left out when the embeddings are tied (llama.cpp then reads
 * token_embd). Norms and embeddings stay f32.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseModelConfig } from '../../../libs/engine/src/config';
import { f32ToBf16, f32ToF16 } from '../../../libs/engine/src/dtype';
import { SafetensorsFile } from '../../../libs/engine/src/safetensors';

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

type Value = { kind: Kind.U32 | Kind.I32 | Kind.F32; value: number } | { kind: Kind.STRING; value: string } | { kind: Kind.ARRAY; of: Kind.STRING | Kind.I32; values: (string | number)[] };

interface Tensor {
  name: string;
  /** ne0 (the contiguous axis) first: [in, out] for a Hugging Face [out, in] weight. */
  dims: number[];
  type: number;
  data: Uint8Array;
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

/** Writes `dir`'s checkpoint to `out` as GGUF with projections in `weights`; returns out. */
export function writeGguf(dir: string, out: string, weights: GgufWeights): string {
  const config = parseModelConfig(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')));
  if (config.modelType !== 'llama' || config.qkvBias || config.oBias || config.ropeScaling) {
    throw new Error('writeGguf: only Llama checkpoints without attention biases or RoPE scaling');
  }
  const tokenizer = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')) as {
    model: { vocab: Record<string, number>; merges: (string | [string, string])[] };
    added_tokens: { id: number; special: boolean }[];
  };
  const file = SafetensorsFile.open(path.join(dir, 'model.safetensors'));
  const tensors: Tensor[] = [];
  try {
    const add = (name: string, from: string, quantize: boolean, heads = 0) => {
      const t = file.read(from);
      const [rows, cols] = t.shape.length === 2 ? t.shape : [1, t.shape[0]];
      const data = heads ? interleaveHeads(t.data, rows, cols, heads) : t.data;
      const dims = t.shape.length === 2 ? [cols, rows] : [cols];
      if (quantize && weights === 'q8_0' && cols % Q8_BLOCK === 0) tensors.push({ name, dims, type: GGML_Q8_0, data: quantizeQ8(data) });
      else if (quantize && weights === 'bf16') tensors.push({ name, dims, type: GGML_BF16, data: bf16Bytes(data) });
      else tensors.push({ name, dims, type: GGML_F32, data: f32Bytes(data) });
    };
    add('token_embd.weight', 'model.embed_tokens.weight', false);
    for (let l = 0; l < config.numLayers; l++) {
      const p = `model.layers.${l}`;
      add(`blk.${l}.attn_norm.weight`, `${p}.input_layernorm.weight`, false);
      add(`blk.${l}.attn_q.weight`, `${p}.self_attn.q_proj.weight`, true, config.numHeads);
      add(`blk.${l}.attn_k.weight`, `${p}.self_attn.k_proj.weight`, true, config.numKvHeads);
      add(`blk.${l}.attn_v.weight`, `${p}.self_attn.v_proj.weight`, true);
      add(`blk.${l}.attn_output.weight`, `${p}.self_attn.o_proj.weight`, true);
      add(`blk.${l}.ffn_norm.weight`, `${p}.post_attention_layernorm.weight`, false);
      add(`blk.${l}.ffn_gate.weight`, `${p}.mlp.gate_proj.weight`, true);
      add(`blk.${l}.ffn_up.weight`, `${p}.mlp.up_proj.weight`, true);
      add(`blk.${l}.ffn_down.weight`, `${p}.mlp.down_proj.weight`, true);
    }
    add('output_norm.weight', 'model.norm.weight', false);
    if (!config.tieWordEmbeddings) add('output.weight', 'lm_head.weight', true);
  } finally {
    file.close();
  }

  const tokens = Object.entries(tokenizer.model.vocab)
    .sort((a, b) => a[1] - b[1])
    .map(([token]) => token);
  const special = new Set(tokenizer.added_tokens.filter((t) => t.special).map((t) => t.id));
  const metadata: [string, Value][] = [
    ['general.architecture', { kind: Kind.STRING, value: 'llama' }],
    ['general.name', { kind: Kind.STRING, value: path.basename(dir) }],
    ['general.alignment', { kind: Kind.U32, value: ALIGNMENT }],
    ['llama.context_length', { kind: Kind.U32, value: config.maxPositionEmbeddings }],
    ['llama.embedding_length', { kind: Kind.U32, value: config.hiddenSize }],
    ['llama.block_count', { kind: Kind.U32, value: config.numLayers }],
    ['llama.feed_forward_length', { kind: Kind.U32, value: config.intermediateSize }],
    ['llama.attention.head_count', { kind: Kind.U32, value: config.numHeads }],
    ['llama.attention.head_count_kv', { kind: Kind.U32, value: config.numKvHeads }],
    ['llama.attention.layer_norm_rms_epsilon', { kind: Kind.F32, value: config.rmsNormEps }],
    ['llama.rope.freq_base', { kind: Kind.F32, value: config.ropeTheta }],
    ['llama.rope.dimension_count', { kind: Kind.U32, value: config.headDim }],
    ['llama.vocab_size', { kind: Kind.U32, value: config.vocabSize }],
    ['tokenizer.ggml.model', { kind: Kind.STRING, value: 'gpt2' }],
    ['tokenizer.ggml.pre', { kind: Kind.STRING, value: 'default' }],
    ['tokenizer.ggml.tokens', { kind: Kind.ARRAY, of: Kind.STRING, values: tokens }],
    // 1 normal, 3 control (llama_token_type).
    ['tokenizer.ggml.token_type', { kind: Kind.ARRAY, of: Kind.I32, values: tokens.map((_, id) => (special.has(id) ? 3 : 1)) }],
    ['tokenizer.ggml.merges', { kind: Kind.ARRAY, of: Kind.STRING, values: tokenizer.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m)) }],
    ['tokenizer.ggml.bos_token_id', { kind: Kind.U32, value: config.bosTokenId ?? 1 }],
    ['tokenizer.ggml.eos_token_id', { kind: Kind.U32, value: config.eosTokenIds[0] ?? 2 }],
  ];

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
    offset += Math.ceil(t.data.length / ALIGNMENT) * ALIGNMENT;
  }
  w.pad();
  for (const t of tensors) {
    w.bytes(t.data);
    w.pad();
  }
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const fd = fs.openSync(out, 'w');
  try {
    for (const chunk of w.chunks) fs.writeSync(fd, chunk);
  } finally {
    fs.closeSync(fd);
  }
  return out;
}
