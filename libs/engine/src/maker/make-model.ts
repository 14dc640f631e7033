import * as fs from 'node:fs';
import * as path from 'node:path';
import { familyTraits, ModelConfig, toHfConfig } from '../config';
import { fromFloat32, StorageDtype } from '../dtype';
import { SeededRandom } from '../random';
import { storedBytes, TensorToWrite, writeSafetensors } from '../safetensors';
import { QWEN3_CHAT_TEMPLATE } from './chat-templates';
import { BOS_ID, CHATML_FORMAT, ChatFormat, EOS_ID, GEMMA_SPECIAL_TOKENS, makeByteFallbackTokenizerFiles, makeTokenizerFiles, TokenizerFiles } from './tokenizer-files';

export type Preset = 'tiny' | 'tiny-qwen3' | 'tiny-gemma3' | 'tiny-llama3.2' | 'smollm2-135m' | 'qwen3-0.6b' | 'gemma3-270m' | 'llama3.2-1b';

/** Gemma's ids of <bos>, and of <end_of_turn> and <eos>, in the maker's byte-fallback vocabulary. */
const GEMMA_BOS_ID = GEMMA_SPECIAL_TOKENS.indexOf('<bos>');
const GEMMA_EOS_IDS = [GEMMA_SPECIAL_TOKENS.indexOf('<end_of_turn>'), GEMMA_SPECIAL_TOKENS.indexOf('<eos>')];

/** Llama 3.1+'s RoPE rescaling, as Llama 3.2's config.json writes it. */
const LLAMA_3_2_ROPE = { type: 'llama3' as const, factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 };

/** Loads and runs in milliseconds: for tests and the service's embedded default model. */
const TINY: ModelConfig = {
  modelType: 'llama',
  vocabSize: 512,
  hiddenSize: 64,
  intermediateSize: 160,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  rmsNormEps: 1e-5,
  ropeTheta: 10000,
  ropeScaling: null,
  maxPositionEmbeddings: 2048,
  tieWordEmbeddings: false,
  qkvBias: false,
  oBias: false,
  qkNorm: false,
  hiddenAct: 'silu',
  normUnitOffset: false,
  sandwichNorms: false,
  scaleEmbeddings: false,
  queryPreAttnScalar: null,
  slidingWindow: null,
  bosTokenId: BOS_ID,
  eosTokenIds: [EOS_ID],
};

/** The shapes of google/gemma-3-270m. */
const GEMMA3_270M: ModelConfig = {
  ...TINY,
  ...familyTraits('gemma3_text'),
  modelType: 'gemma3_text',
  vocabSize: 262144,
  hiddenSize: 640,
  intermediateSize: 2048,
  numLayers: 18,
  numHeads: 4,
  numKvHeads: 1,
  headDim: 256,
  rmsNormEps: 1e-6,
  ropeTheta: 1000000,
  maxPositionEmbeddings: 32768,
  tieWordEmbeddings: true,
  hiddenAct: 'gelu_pytorch_tanh',
  queryPreAttnScalar: 256,
  // Five sliding-window layers, then one that attends to every position.
  slidingWindow: { size: 512, layers: Array.from({ length: 18 }, (_, i) => (i + 1) % 6 !== 0), ropeTheta: 10000 },
  bosTokenId: GEMMA_BOS_ID,
  eosTokenIds: GEMMA_EOS_IDS,
};

export const PRESETS: Record<Preset, ModelConfig> = {
  tiny: TINY,
  /** Qwen3's layout (q_norm and k_norm, head_dim apart from hidden / heads) at the tiny preset's size, untied as tiny is (see makeModel): for tests. */
  'tiny-qwen3': { ...TINY, modelType: 'qwen3', headDim: 32, rmsNormEps: 1e-6, ropeTheta: 1000000, qkNorm: true },
  /**
   * Gemma 3's layout at the tiny preset's size, tied as Gemma is: an 8-position window on the
   * first two of three layers, q/k scaled by a query_pre_attn_scalar other than head_dim, a
   * byte-fallback vocabulary (makeModel): for tests.
   */
  'tiny-gemma3': {
    ...GEMMA3_270M,
    vocabSize: 512,
    // sqrt(80) is no bf16 number: the embedding scale's rounding shows.
    hiddenSize: 80,
    intermediateSize: 160,
    numLayers: 3,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 32,
    maxPositionEmbeddings: 2048,
    queryPreAttnScalar: 24,
    slidingWindow: { size: 8, layers: [true, true, false], ropeTheta: 10000 },
  },
  /** Llama 3.2's RoPE (base 500000, llama3 rescaling) at the tiny preset's size: for tests. */
  'tiny-llama3.2': { ...TINY, ropeTheta: 500000, ropeScaling: LLAMA_3_2_ROPE, tieWordEmbeddings: true },
  /** The shapes of HuggingFaceTB/SmolLM2-135M-Instruct: for benchmarks. */
  'smollm2-135m': {
    ...TINY,
    vocabSize: 49152,
    hiddenSize: 576,
    intermediateSize: 1536,
    numLayers: 30,
    numHeads: 9,
    numKvHeads: 3,
    headDim: 64,
    ropeTheta: 100000,
    maxPositionEmbeddings: 8192,
    tieWordEmbeddings: true,
  },
  /** The shapes of Qwen/Qwen3-0.6B: for benchmarks. */
  'qwen3-0.6b': {
    ...TINY,
    ...familyTraits('qwen3'),
    modelType: 'qwen3',
    vocabSize: 151936,
    hiddenSize: 1024,
    intermediateSize: 3072,
    numLayers: 28,
    numHeads: 16,
    numKvHeads: 8,
    headDim: 128,
    rmsNormEps: 1e-6,
    ropeTheta: 1000000,
    maxPositionEmbeddings: 40960,
    tieWordEmbeddings: true,
  },
  /** The shapes of google/gemma-3-270m: for benchmarks. */
  'gemma3-270m': GEMMA3_270M,
  /** The shapes of meta-llama/Llama-3.2-1B: for benchmarks. */
  'llama3.2-1b': {
    ...TINY,
    vocabSize: 128256,
    hiddenSize: 2048,
    intermediateSize: 8192,
    numLayers: 16,
    numHeads: 32,
    numKvHeads: 8,
    headDim: 64,
    ropeTheta: 500000,
    ropeScaling: LLAMA_3_2_ROPE,
    maxPositionEmbeddings: 131072,
    tieWordEmbeddings: true,
  },
};

export interface MakeModelOptions {
  preset: Preset;
  /** Directory to write; created if missing, files in it overwritten. */
  out: string;
  seed?: number;
  /** Stored dtype of the weights. Default F32. */
  dtype?: StorageDtype;
  /** Split the weights over this many files with model.safetensors.index.json. Default 1. */
  shards?: number;
  /** Shape and architecture overrides on top of the preset. */
  overrides?: Partial<ModelConfig>;
  /** Std of the random weights (HF's initializer_range). Default 0.02. */
  initStd?: number;
  /**
   * The RMSNorms' weights: 'ones' (HF's init, the default), or 'near-ones' (each near one, as
   * Gemma 3's sandwich norms and q_norm and k_norm always are), so that a test sees whether a
   * kernel applies the norms' weights.
   */
  normWeights?: 'ones' | 'near-ones';
}

export interface MadeModel {
  dir: string;
  config: ModelConfig;
  files: string[];
}

/**
 * Writes a complete model directory in Hugging Face layout with seeded random weights.
 *
 * Random weights alone give a near-uniform next token that never favours the end of the
 * turn. The tiny preset shapes its (untied) embeddings so that the end-of-turn logit sits a
 * few nats above the rest and raw byte tokens a little below: sampling at temperature 1 emits
 * varied, word-like tokens and usually ends a reply within a few dozen to a hundred tokens
 * (greedy decoding settles into a short cycle and runs to max tokens).
 */
export function makeModel(options: MakeModelOptions): MadeModel {
  const config: ModelConfig = { ...PRESETS[options.preset], ...options.overrides };
  if (config.modelType === 'qwen2') config.qkvBias = true;
  Object.assign(config, familyTraits(config.modelType));
  if (config.numHeads % config.numKvHeads !== 0) throw new Error('heads must be a multiple of kv heads');
  const dtype = options.dtype ?? 'F32';
  const std = options.initStd ?? 0.02;
  const rng = new SeededRandom(options.seed ?? 0);
  const dir = path.resolve(options.out);
  fs.mkdirSync(dir, { recursive: true });

  const { hiddenSize: C, intermediateSize: I, numHeads: H, numKvHeads: KV, headDim: D, vocabSize: V } = config;
  const tensors: Record<string, TensorToWrite> = {};
  // Each tensor's stored bytes go to a scratch file as they are drawn (in a fixed order, which the
  // seeded draws depend on), and are copied into the checkpoint in its own order: the maker holds
  // one tensor at a time, not the model (a 4B model is 16 GB as f32).
  const scratch = new ScratchFile(path.join(dir, '.maker-scratch'));
  const add = (name: string, shape: number[], data: Float32Array) => {
    tensors[name] = { shape, data: scratch.append(fromFloat32(data, dtype)), dtype };
  };
  const random = (name: string, shape: number[], scale = std) => add(name, shape, rng.normals(shape.reduce((a, b) => a * b, 1), scale));
  // Gemma's norms scale by 1 + w: its weights that scale by one are zeros.
  const unit = config.normUnitOffset ? 0 : 1;
  const ones = (name: string, n: number) => add(name, [n], new Float32Array(n).fill(unit));
  // Near one rather than one (HF's init), so that a test sees whether they are read and applied.
  const nearOnes = (name: string, n: number) => add(name, [n], rng.normals(n, 0.1).map((v) => unit + v));
  // The norms HF initialises to one: their weights as normWeights asks.
  const normWeight = options.normWeights === 'near-ones' ? nearOnes : ones;

  // Gemma's byte-fallback vocabulary, or byte-level BPE.
  const tok: TokenizerFiles = config.modelType === 'gemma3_text' ? makeByteFallbackTokenizerFiles(V, config.maxPositionEmbeddings) : makeTokenizerFiles(V, config.maxPositionEmbeddings, chatFormat(config));
  const embeddings = shapedEmbeddings(rng, V, C, tok, config.tieWordEmbeddings);
  add('model.embed_tokens.weight', [V, C], embeddings.input);
  for (let i = 0; i < config.numLayers; i++) {
    const p = `model.layers.${i}`;
    normWeight(`${p}.input_layernorm.weight`, C);
    if (config.sandwichNorms) {
      // Gemma 3: post_attention_layernorm is on the attention's output, pre_feedforward_layernorm before the MLP.
      nearOnes(`${p}.post_attention_layernorm.weight`, C);
      normWeight(`${p}.pre_feedforward_layernorm.weight`, C);
      nearOnes(`${p}.post_feedforward_layernorm.weight`, C);
    } else {
      normWeight(`${p}.post_attention_layernorm.weight`, C);
    }
    random(`${p}.self_attn.q_proj.weight`, [H * D, C]);
    random(`${p}.self_attn.k_proj.weight`, [KV * D, C]);
    random(`${p}.self_attn.v_proj.weight`, [KV * D, C]);
    random(`${p}.self_attn.o_proj.weight`, [C, H * D]);
    if (config.qkvBias) {
      random(`${p}.self_attn.q_proj.bias`, [H * D]);
      random(`${p}.self_attn.k_proj.bias`, [KV * D]);
      random(`${p}.self_attn.v_proj.bias`, [KV * D]);
    }
    if (config.oBias) random(`${p}.self_attn.o_proj.bias`, [C]);
    if (config.qkNorm) {
      nearOnes(`${p}.self_attn.q_norm.weight`, D);
      nearOnes(`${p}.self_attn.k_norm.weight`, D);
    }
    random(`${p}.mlp.gate_proj.weight`, [I, C]);
    random(`${p}.mlp.up_proj.weight`, [I, C]);
    random(`${p}.mlp.down_proj.weight`, [C, I]);
  }
  normWeight('model.norm.weight', C);
  if (!config.tieWordEmbeddings) add('lm_head.weight', [V, C], embeddings.output);

  let files: string[];
  try {
    files = writeWeights(dir, tensors, Math.max(1, options.shards ?? 1));
  } finally {
    scratch.remove();
  }
  const json = (name: string, value: unknown) => {
    fs.writeFileSync(path.join(dir, name), JSON.stringify(value, null, 2) + '\n');
    files.push(name);
  };
  json('config.json', { ...toHfConfig(config), torch_dtype: { F32: 'float32', F16: 'float16', BF16: 'bfloat16' }[dtype] });
  json('generation_config.json', {
    bos_token_id: tok.bosId,
    eos_token_id: tok.eosIds.length === 1 ? tok.eosIds[0] : tok.eosIds,
    pad_token_id: tok.eosIds[0],
    do_sample: true,
    temperature: 1.0,
    top_p: 1.0,
    max_new_tokens: 256,
  });
  json('tokenizer.json', tok.tokenizerJson);
  json('tokenizer_config.json', tok.tokenizerConfig);
  return { dir, config, files };
}

/** Shapes of the random embeddings and lm_head; see makeModel. */
const EMBEDDING_SHAPING = { noiseStd: 2, eosNats: 3, byteNats: -2 };

/**
 * Input embeddings all share one direction, which survives to the final hidden state
 * (norm sqrt(C), mostly along it); an output row stretched by x / sqrt(C) along the same
 * direction then gains about x nats. Untied rows, so a token does not predict itself.
 *
 * `tied`: the output rows are the input ones, so there is no shaping, and the shared direction
 * is left out, which would otherwise give each token a fixed bias (its noise along it) that
 * makes one token win everywhere.
 */
function shapedEmbeddings(rng: SeededRandom, V: number, C: number, tok: Pick<TokenizerFiles, 'eosIds' | 'firstByteId'>, tied: boolean, shaping = EMBEDDING_SHAPING) {
  const shared = rng.normals(C, 1);
  const norm = Math.hypot(...shared);
  for (let j = 0; j < C; j++) shared[j] = tied ? 0 : shared[j] / norm;
  const input = rng.normals(V * C, 0.5 / Math.sqrt(C));
  const output = rng.normals(V * C, shaping.noiseStd / Math.sqrt(C));
  // Specials and byte tokens come first in both of the maker's vocabularies.
  const firstMerge = tok.firstByteId + 256;
  const endOfTurn = tok.eosIds[0];
  for (let v = 0; v < V; v++) {
    const nats = v === endOfTurn ? shaping.eosNats : v < firstMerge ? shaping.byteNats : 0;
    for (let j = 0; j < C; j++) {
      input[v * C + j] += shared[j];
      output[v * C + j] += (nats / Math.sqrt(C)) * shared[j];
    }
  }
  return { input, output };
}

function writeWeights(dir: string, tensors: Record<string, TensorToWrite>, shards: number): string[] {
  for (const f of fs.readdirSync(dir)) if (/^model.*\.safetensors(\.index\.json)?$/.test(f)) fs.rmSync(path.join(dir, f));
  if (shards === 1) {
    writeSafetensors(path.join(dir, 'model.safetensors'), tensors, { format: 'pt' });
    return ['model.safetensors'];
  }
  const names = Object.keys(tensors).sort();
  const perShard = Math.ceil(names.length / shards);
  const weightMap: Record<string, string> = {};
  const files: string[] = [];
  let totalSize = 0;
  for (let s = 0; s < shards; s++) {
    const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const part = Object.fromEntries(names.slice(s * perShard, (s + 1) * perShard).map((n) => [n, tensors[n]]));
    writeSafetensors(path.join(dir, file), part, { format: 'pt' });
    for (const [n, t] of Object.entries(part)) {
      weightMap[n] = file;
      totalSize += storedBytes(t);
    }
    files.push(file);
  }
  fs.writeFileSync(
    path.join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap }, null, 2) + '\n',
  );
  files.push('model.safetensors.index.json');
  return files;
}

/** The family's chat template and its tokens: Qwen3's own (reasoning in <think> blocks), else ChatML. */
function chatFormat(config: ModelConfig): ChatFormat {
  return config.modelType === 'qwen3' ? { chatTemplate: QWEN3_CHAT_TEMPLATE, addedTokens: ['<think>', '</think>'] } : CHATML_FORMAT;
}

/** Bytes appended to a file, each piece read back once by the function append returns. */
class ScratchFile {
  private readonly fd: number;
  private size = 0;

  constructor(private readonly file: string) {
    this.fd = fs.openSync(file, 'w+');
  }

  append(bytes: Uint8Array): () => Uint8Array {
    const offset = this.size;
    fs.writeSync(this.fd, bytes, 0, bytes.byteLength, offset);
    this.size += bytes.byteLength;
    const length = bytes.byteLength;
    return () => {
      const out = Buffer.allocUnsafe(length);
      for (let done = 0; done < length; ) done += fs.readSync(this.fd, out, done, length - done, offset + done);
      return out;
    };
  }

  remove(): void {
    fs.closeSync(this.fd);
    fs.rmSync(this.file, { force: true });
  }
}
