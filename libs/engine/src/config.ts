import { ModelLoadError } from './errors';

/** The hyper-parameters of a Llama-family decoder, as read from a HF config.json. */
export interface ModelConfig {
  /** 'llama', 'qwen2', 'qwen3' or 'gemma3_text'. */
  modelType: 'llama' | 'qwen2' | 'qwen3' | 'gemma3_text';
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling | null;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Biases on q, k, v (Qwen2 always, Llama when attention_bias). */
  qkvBias: boolean;
  /** Bias on o_proj (Llama and Qwen3 attention_bias only). */
  oBias: boolean;
  /** RMSNorm over each head's queries and keys before RoPE (Qwen3's and Gemma 3's q_norm and k_norm, of headDim weights each). */
  qkNorm: boolean;
  /** The MLP gate's activation: SiLU (SwiGLU) or GELU's tanh approximation (Gemma's GeGLU). */
  hiddenAct: HiddenAct;
  /** Gemma's RMSNorm, which scales by 1 + w instead of w (every norm of the model). */
  normUnitOffset: boolean;
  /**
   * Gemma 3's four norms a layer: besides the norms before attention and the MLP, one on each
   * one's output before its residual add (HF's post_attention_layernorm and
   * post_feedforward_layernorm; its pre-MLP norm is pre_feedforward_layernorm).
   */
  sandwichNorms: boolean;
  /** Token embeddings multiplied by sqrt(hidden_size), rounded to the embedding's stored dtype as transformers does (Gemma). */
  scaleEmbeddings: boolean;
  /** Attention scores scaled by queryPreAttnScalar^-0.5 (Gemma's query_pre_attn_scalar); null: by headDim^-0.5. */
  queryPreAttnScalar: number | null;
  /** Sliding-window attention on some layers (Gemma 3); null where every layer attends to the whole sequence. */
  slidingWindow: SlidingWindow | null;
  bosTokenId: number | null;
  eosTokenIds: number[];
}

export type HiddenAct = 'silu' | 'gelu_pytorch_tanh';

/** RoPE rescaling: Llama 3.1+'s frequency-dependent one, or every frequency divided by `factor` (linear; Gemma 3 4B and up). */
export type RopeScaling =
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    }
  | { type: 'linear'; factor: number };

/** Layers that attend to the last `size` positions only (HF's layer_types "sliding_attention"). */
export interface SlidingWindow {
  /** Positions a query sees, its own included: keys at positions p - size < k <= p. */
  size: number;
  /** Per layer, whether it attends within the window (the others attend to every position). */
  layers: boolean[];
  /** RoPE base of the windowed layers (Gemma 3's rope_local_base_freq), never rescaled. */
  ropeTheta: number;
}

const ARCHITECTURES: Record<string, ModelConfig['modelType']> = {
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
  Gemma3ForCausalLM: 'gemma3_text',
};

/** What a family's architecture fixes, whatever its config.json says. */
export function familyTraits(modelType: ModelConfig['modelType']): Pick<ModelConfig, 'qkNorm' | 'normUnitOffset' | 'sandwichNorms' | 'scaleEmbeddings'> {
  const gemma = modelType === 'gemma3_text';
  return { qkNorm: modelType === 'qwen3' || gemma, normUnitOffset: gemma, sandwichNorms: gemma, scaleEmbeddings: gemma };
}

const HIDDEN_ACTS: readonly string[] = ['silu', 'gelu_pytorch_tanh'] satisfies HiddenAct[];

const MODEL_TYPES: readonly string[] = Object.values(ARCHITECTURES);

export function parseModelConfig(raw: Record<string, unknown>, file = 'config.json'): ModelConfig {
  const architectures = (raw['architectures'] as string[] | undefined) ?? [];
  const byArch = architectures.map((a) => ARCHITECTURES[a]).find(Boolean);
  const modelType = byArch ?? (MODEL_TYPES.includes(raw['model_type'] as string) ? (raw['model_type'] as ModelConfig['modelType']) : undefined);
  if (!modelType) {
    throw new ModelLoadError(
      `unsupported architecture ${JSON.stringify(architectures.length ? architectures : raw['model_type'])}; supported: ${Object.keys(ARCHITECTURES).join(', ')}`,
      file,
    );
  }
  const num = (key: string, fallback?: number): number => {
    const v = raw[key];
    if (typeof v === 'number' && Number.isFinite(v)) return v;
    if (fallback !== undefined) return fallback;
    throw new ModelLoadError(`missing or invalid "${key}"`, file);
  };
  const gemma = modelType === 'gemma3_text';
  // Gemma's configs name it hidden_activation.
  const act = raw['hidden_activation'] ?? raw['hidden_act'] ?? (gemma ? 'gelu_pytorch_tanh' : 'silu');
  if (!HIDDEN_ACTS.includes(act as string)) throw new ModelLoadError(`unsupported hidden activation "${act}" (${HIDDEN_ACTS.join(', ')} are)`, file);
  if (raw['mlp_bias']) throw new ModelLoadError('mlp_bias is not supported', file);
  // Qwen2 and Qwen3 configs carry these keys, false in every published checkpoint.
  if (raw['use_sliding_window']) throw new ModelLoadError('use_sliding_window is not supported', file);
  // Gemma 2's; null in every Gemma 3 config.
  for (const key of ['final_logit_softcapping', 'attn_logit_softcapping']) {
    if (raw[key] !== undefined && raw[key] !== null) throw new ModelLoadError(`${key} is not supported`, file);
  }
  // EmbeddingGemma's: an encoder, not a decoder.
  if (raw['use_bidirectional_attention']) throw new ModelLoadError('use_bidirectional_attention is not supported', file);

  const hiddenSize = num('hidden_size');
  const numHeads = num('num_attention_heads');
  const numKvHeads = num('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) throw new ModelLoadError('num_attention_heads must be a multiple of num_key_value_heads', file);
  const attentionBias = Boolean(raw['attention_bias']);
  const eos = raw['eos_token_id'];
  const numLayers = num('num_hidden_layers');
  const rope = parseRope(raw, gemma, file);
  return {
    modelType,
    vocabSize: num('vocab_size'),
    hiddenSize,
    intermediateSize: num('intermediate_size'),
    numLayers,
    numHeads,
    numKvHeads,
    // transformers' Gemma3TextConfig defaults head_dim to 256, whatever hidden / heads is.
    headDim: num('head_dim', gemma ? 256 : hiddenSize / numHeads),
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ropeTheta: rope.theta,
    ropeScaling: rope.scaling,
    maxPositionEmbeddings: num('max_position_embeddings', 2048),
    // transformers defaults tie_word_embeddings to true when absent.
    tieWordEmbeddings: raw['tie_word_embeddings'] === undefined ? true : Boolean(raw['tie_word_embeddings']),
    qkvBias: modelType === 'qwen2' || attentionBias,
    oBias: modelType !== 'qwen2' && attentionBias,
    ...familyTraits(modelType),
    hiddenAct: act as HiddenAct,
    queryPreAttnScalar: gemma ? num('query_pre_attn_scalar', 256) : null,
    slidingWindow: gemma ? parseSlidingWindow(raw, numLayers, rope.localTheta, file) : null,
    bosTokenId: typeof raw['bos_token_id'] === 'number' ? (raw['bos_token_id'] as number) : null,
    eosTokenIds: Array.isArray(eos) ? (eos as number[]) : typeof eos === 'number' ? [eos] : [],
  };
}

/**
 * RoPE's base and scaling, and Gemma 3's local base: from rope_theta, rope_scaling and
 * rope_local_base_freq as published checkpoints write them, or from the rope_parameters that
 * newer transformers writes instead (one dict, or one per layer type for Gemma 3).
 */
function parseRope(raw: Record<string, unknown>, gemma: boolean, file: string): { theta: number; scaling: RopeScaling | null; localTheta: number } {
  const params = (raw['rope_parameters'] ?? null) as Record<string, Record<string, unknown> | unknown> | null;
  const global = (gemma ? params?.['full_attention'] : params) as Record<string, unknown> | null | undefined;
  const local = (gemma ? params?.['sliding_attention'] : null) as Record<string, unknown> | null | undefined;
  const theta = Number(global?.['rope_theta'] ?? raw['rope_theta'] ?? (gemma ? 1_000_000 : 10000));
  const localTheta = Number(local?.['rope_theta'] ?? raw['rope_local_base_freq'] ?? 10000);
  if (local && (local['rope_type'] ?? 'default') !== 'default') throw new ModelLoadError(`unsupported rope_type "${local['rope_type']}" for sliding_attention (default is)`, file);
  return { theta, scaling: parseRopeScaling(global ?? raw['rope_scaling'], file), localTheta };
}

function parseRopeScaling(raw: unknown, file: string): RopeScaling | null {
  if (raw === null || raw === undefined) return null;
  const r = raw as Record<string, unknown>;
  const type = r['rope_type'] ?? r['type'] ?? 'default';
  if (type === 'default') return null;
  if (type === 'linear') return { type: 'linear', factor: Number(r['factor']) };
  if (type !== 'llama3') throw new ModelLoadError(`unsupported rope_scaling type "${type}" (llama3 and linear are)`, file);
  return {
    type: 'llama3',
    factor: Number(r['factor'] ?? 8),
    lowFreqFactor: Number(r['low_freq_factor'] ?? 1),
    highFreqFactor: Number(r['high_freq_factor'] ?? 4),
    originalMaxPositionEmbeddings: Number(r['original_max_position_embeddings'] ?? 8192),
  };
}

/**
 * Gemma 3's windowed layers: those layer_types names "sliding_attention", or, in configs
 * written before layer_types existed, every layer but each sliding_window_pattern-th.
 */
function parseSlidingWindow(raw: Record<string, unknown>, numLayers: number, ropeTheta: number, file: string): SlidingWindow | null {
  const size = raw['sliding_window'] ?? 4096;
  if (size === null) return null;
  if (typeof size !== 'number' || !(size >= 1)) throw new ModelLoadError('invalid "sliding_window"', file);
  const types = raw['layer_types'];
  let layers: boolean[];
  if (Array.isArray(types)) {
    if (types.length !== numLayers || types.some((t) => t !== 'sliding_attention' && t !== 'full_attention')) {
      throw new ModelLoadError(`"layer_types" must name ${numLayers} layers, each sliding_attention or full_attention`, file);
    }
    layers = types.map((t) => t === 'sliding_attention');
  } else {
    const pattern = Number(raw['sliding_window_pattern'] ?? raw['_sliding_window_pattern'] ?? 6);
    layers = Array.from({ length: numLayers }, (_, i) => (i + 1) % pattern !== 0);
  }
  return layers.some(Boolean) ? { size, layers, ropeTheta } : null;
}

/** The inverse of parseModelConfig, for the model maker. */
export function toHfConfig(c: ModelConfig): Record<string, unknown> {
  if (c.modelType === 'gemma3_text') return gemma3HfConfig(c);
  const base: Record<string, unknown> = {
    architectures: [architectureOf(c)],
    model_type: c.modelType,
    attention_bias: c.modelType === 'qwen2' ? undefined : c.oBias,
    attention_dropout: 0.0,
    bos_token_id: c.bosTokenId,
    eos_token_id: c.eosTokenIds.length === 1 ? c.eosTokenIds[0] : c.eosTokenIds,
    head_dim: c.headDim,
    hidden_act: c.hiddenAct,
    hidden_size: c.hiddenSize,
    initializer_range: 0.02,
    intermediate_size: c.intermediateSize,
    max_position_embeddings: c.maxPositionEmbeddings,
    mlp_bias: false,
    num_attention_heads: c.numHeads,
    num_hidden_layers: c.numLayers,
    num_key_value_heads: c.numKvHeads,
    rms_norm_eps: c.rmsNormEps,
    rope_scaling: hfRopeScaling(c.ropeScaling),
    rope_theta: c.ropeTheta,
    tie_word_embeddings: c.tieWordEmbeddings,
    ...(c.modelType === 'qwen3' ? { use_sliding_window: false, sliding_window: null, max_window_layers: c.numLayers } : {}),
    torch_dtype: 'float32',
    use_cache: true,
    vocab_size: c.vocabSize,
  };
  return Object.fromEntries(Object.entries(base).filter(([, v]) => v !== undefined));
}

/** Gemma 3's keys, as google/gemma-3-270m's config.json writes them. */
function gemma3HfConfig(c: ModelConfig): Record<string, unknown> {
  const window = c.slidingWindow;
  return {
    architectures: [architectureOf(c)],
    attention_bias: c.oBias,
    attention_dropout: 0.0,
    attn_logit_softcapping: null,
    bos_token_id: c.bosTokenId,
    eos_token_id: c.eosTokenIds.length === 1 ? c.eosTokenIds[0] : c.eosTokenIds,
    final_logit_softcapping: null,
    head_dim: c.headDim,
    hidden_activation: c.hiddenAct,
    hidden_size: c.hiddenSize,
    initializer_range: 0.02,
    intermediate_size: c.intermediateSize,
    layer_types: Array.from({ length: c.numLayers }, (_, i) => (window?.layers[i] ? 'sliding_attention' : 'full_attention')),
    max_position_embeddings: c.maxPositionEmbeddings,
    model_type: c.modelType,
    num_attention_heads: c.numHeads,
    num_hidden_layers: c.numLayers,
    num_key_value_heads: c.numKvHeads,
    query_pre_attn_scalar: c.queryPreAttnScalar ?? c.headDim,
    rms_norm_eps: c.rmsNormEps,
    rope_local_base_freq: window?.ropeTheta ?? 10000,
    rope_scaling: hfRopeScaling(c.ropeScaling),
    rope_theta: c.ropeTheta,
    sliding_window: window?.size ?? null,
    // Published Gemma 3 configs leave it to its default, true.
    ...(c.tieWordEmbeddings ? {} : { tie_word_embeddings: false }),
    torch_dtype: 'float32',
    use_bidirectional_attention: false,
    use_cache: true,
    vocab_size: c.vocabSize,
  };
}

function architectureOf(c: ModelConfig): string | undefined {
  return Object.keys(ARCHITECTURES).find((a) => ARCHITECTURES[a] === c.modelType);
}

function hfRopeScaling(s: RopeScaling | null): Record<string, unknown> | null {
  if (!s) return null;
  if (s.type === 'linear') return { rope_type: 'linear', factor: s.factor };
  return {
    rope_type: 'llama3',
    factor: s.factor,
    low_freq_factor: s.lowFreqFactor,
    high_freq_factor: s.highFreqFactor,
    original_max_position_embeddings: s.originalMaxPositionEmbeddings,
  };
}

/** Sampling defaults a model ships in generation_config.json. */
export interface GenerationConfig {
  eosTokenIds: number[];
  bosTokenId: number | null;
  temperature?: number;
  topP?: number;
  topK?: number;
  maxNewTokens?: number;
}

export function parseGenerationConfig(raw: Record<string, unknown>): GenerationConfig {
  const eos = raw['eos_token_id'];
  const opt = (key: string) => (typeof raw[key] === 'number' ? (raw[key] as number) : undefined);
  const doSample = raw['do_sample'];
  return {
    eosTokenIds: Array.isArray(eos) ? (eos as number[]) : typeof eos === 'number' ? [eos] : [],
    bosTokenId: typeof raw['bos_token_id'] === 'number' ? (raw['bos_token_id'] as number) : null,
    // HF ignores temperature etc. when do_sample is false: greedy.
    temperature: doSample === false ? 0 : opt('temperature'),
    topP: opt('top_p'),
    topK: opt('top_k'),
    maxNewTokens: opt('max_new_tokens'),
  };
}
