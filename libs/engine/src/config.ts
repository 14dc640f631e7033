import { ModelLoadError } from './errors';

/** The hyper-parameters of a Llama-family decoder, as read from a HF config.json. */
export interface ModelConfig {
  /** 'llama', 'qwen2' or 'qwen3'. */
  modelType: 'llama' | 'qwen2' | 'qwen3';
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
  /** RMSNorm over each head's queries and keys before RoPE (Qwen3's q_norm and k_norm, of headDim weights each). */
  qkNorm: boolean;
  bosTokenId: number | null;
  eosTokenIds: number[];
}

/** Llama 3.1+ frequency-dependent RoPE rescaling. */
export interface RopeScaling {
  type: 'llama3';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositionEmbeddings: number;
}

const ARCHITECTURES: Record<string, ModelConfig['modelType']> = {
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};

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
  const act = raw['hidden_act'] ?? 'silu';
  if (act !== 'silu') throw new ModelLoadError(`unsupported hidden_act "${act}" (silu is)`, file);
  if (raw['mlp_bias']) throw new ModelLoadError('mlp_bias is not supported', file);
  // Qwen2 and Qwen3 configs carry these keys, false in every published checkpoint.
  if (raw['use_sliding_window']) throw new ModelLoadError('use_sliding_window is not supported', file);

  const hiddenSize = num('hidden_size');
  const numHeads = num('num_attention_heads');
  const numKvHeads = num('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) throw new ModelLoadError('num_attention_heads must be a multiple of num_key_value_heads', file);
  const attentionBias = Boolean(raw['attention_bias']);
  const eos = raw['eos_token_id'];
  return {
    modelType,
    vocabSize: num('vocab_size'),
    hiddenSize,
    intermediateSize: num('intermediate_size'),
    numLayers: num('num_hidden_layers'),
    numHeads,
    numKvHeads,
    headDim: num('head_dim', hiddenSize / numHeads),
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ropeTheta: num('rope_theta', 10000),
    ropeScaling: parseRopeScaling(raw['rope_scaling'], file),
    maxPositionEmbeddings: num('max_position_embeddings', 2048),
    // transformers defaults tie_word_embeddings to true when absent.
    tieWordEmbeddings: raw['tie_word_embeddings'] === undefined ? true : Boolean(raw['tie_word_embeddings']),
    qkvBias: modelType === 'qwen2' || attentionBias,
    oBias: modelType !== 'qwen2' && attentionBias,
    qkNorm: modelType === 'qwen3',
    bosTokenId: typeof raw['bos_token_id'] === 'number' ? (raw['bos_token_id'] as number) : null,
    eosTokenIds: Array.isArray(eos) ? (eos as number[]) : typeof eos === 'number' ? [eos] : [],
  };
}

function parseRopeScaling(raw: unknown, file: string): RopeScaling | null {
  if (raw === null || raw === undefined) return null;
  const r = raw as Record<string, unknown>;
  const type = r['rope_type'] ?? r['type'];
  if (type === 'default') return null;
  if (type !== 'llama3') throw new ModelLoadError(`unsupported rope_scaling type "${type}" (llama3 is)`, file);
  return {
    type: 'llama3',
    factor: Number(r['factor'] ?? 8),
    lowFreqFactor: Number(r['low_freq_factor'] ?? 1),
    highFreqFactor: Number(r['high_freq_factor'] ?? 4),
    originalMaxPositionEmbeddings: Number(r['original_max_position_embeddings'] ?? 8192),
  };
}

/** The inverse of parseModelConfig, for the model maker. */
export function toHfConfig(c: ModelConfig): Record<string, unknown> {
  const base: Record<string, unknown> = {
    architectures: [Object.keys(ARCHITECTURES).find((a) => ARCHITECTURES[a] === c.modelType)],
    model_type: c.modelType,
    attention_bias: c.modelType === 'qwen2' ? undefined : c.oBias,
    attention_dropout: 0.0,
    bos_token_id: c.bosTokenId,
    eos_token_id: c.eosTokenIds.length === 1 ? c.eosTokenIds[0] : c.eosTokenIds,
    head_dim: c.headDim,
    hidden_act: 'silu',
    hidden_size: c.hiddenSize,
    initializer_range: 0.02,
    intermediate_size: c.intermediateSize,
    max_position_embeddings: c.maxPositionEmbeddings,
    mlp_bias: false,
    num_attention_heads: c.numHeads,
    num_hidden_layers: c.numLayers,
    num_key_value_heads: c.numKvHeads,
    rms_norm_eps: c.rmsNormEps,
    rope_scaling: c.ropeScaling
      ? {
          rope_type: 'llama3',
          factor: c.ropeScaling.factor,
          low_freq_factor: c.ropeScaling.lowFreqFactor,
          high_freq_factor: c.ropeScaling.highFreqFactor,
          original_max_position_embeddings: c.ropeScaling.originalMaxPositionEmbeddings,
        }
      : null,
    rope_theta: c.ropeTheta,
    tie_word_embeddings: c.tieWordEmbeddings,
    ...(c.modelType === 'qwen3' ? { use_sliding_window: false, sliding_window: null, max_window_layers: c.numLayers } : {}),
    torch_dtype: 'float32',
    use_cache: true,
    vocab_size: c.vocabSize,
  };
  return Object.fromEntries(Object.entries(base).filter(([, v]) => v !== undefined));
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
