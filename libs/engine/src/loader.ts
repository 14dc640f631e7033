import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { ChatTemplate } from './chat-template';
import { GenerationConfig, ModelConfig, parseGenerationConfig, parseModelConfig } from './config';
import { HalfDtype, halfPairs, roundTo, StorageDtype, transpose2d } from './dtype';
import { ModelLoadError } from './errors';
import { MatMulPlan, startMatMulThreads, tuneMatMul } from './kernels/matmul';
import { EmbeddingTable } from './model/embedding';
import { FrozenLinear, HalfWeight, LinearPart } from './model/linear';
import { Attention, Block, HeadNorms, LlamaModel, MLP, RMSNorm } from './model/llama';
import { Rope } from './model/rope';
import { ChatPrompt, readJson, readTokenizerFiles } from './prompt';
import { Checkpoint } from './safetensors';
import { TextTokenizer } from './tokenizer';

/** A model directory in Hugging Face layout, loaded onto the current tfjs backend. */
export interface LoadedModel {
  dir: string;
  config: ModelConfig;
  generationConfig: GenerationConfig;
  model: LlamaModel;
  tokenizer: TextTokenizer;
  chatTemplate: ChatTemplate | null;
  /** Chat messages to prompt tokens, with this model's tokenizer, template and context window. */
  prompt: ChatPrompt;
  /** Token ids that end generation: generation_config's, else config's, else the tokenizer's eos. */
  eosTokenIds: number[];
  dispose(): void;
}

/** loadModel's readAhead values, and the inference worker's MATMUL_READ_AHEAD. */
export const READ_AHEAD_SETTINGS = ['auto', 'on', 'off'] as const;
export type ReadAheadSetting = (typeof READ_AHEAD_SETTINGS)[number];

/** loadModel's gpuWeights values. */
export const GPU_WEIGHTS_SETTINGS = ['checkpoint', 'f32'] as const;
export type GpuWeightsSetting = (typeof GPU_WEIGHTS_SETTINGS)[number];

/** loadModel's weights values, and the inference worker's WEIGHTS. */
export const WEIGHTS_SETTINGS = ['checkpoint', 'q8'] as const;
export type WeightsSetting = (typeof WEIGHTS_SETTINGS)[number];

/** loadModel's oneRowTile values, and the inference worker's MATMUL_ONE_ROW_TILE. */
export const ONE_ROW_TILE_SETTINGS = ['auto', 'narrow', 'wide', 'paired'] as const;
export type OneRowTileSetting = (typeof ONE_ROW_TILE_SETTINGS)[number];

export interface LoadOptions {
  /**
   * The process will only run inference with this model: each projection is packed for the
   * matmul kernel as it is read and its [in, out] copy freed at once (FrozenLinear's
   * releaseForInference), so the weights are held once, in half the bytes when the checkpoint
   * is bf16, and never twice at any moment. Training or gradients through it then throw.
   */
  inferenceOnly?: boolean;
  /**
   * On webgpu, how the projections' weights are held on the GPU: 'checkpoint' (the default) as
   * the checkpoint stores them, a bf16 or f16 checkpoint's in its 16 bits (model/linear.ts's
   * HalfWeight, half the bytes of f32), which the GPU programs unpack to f32 as they read them,
   * for serving and LoRA training alike, with the products of the f32 copy; or 'f32'. Ignored
   * on the other backends.
   */
  gpuWeights?: GpuWeightsSetting;
  /**
   * With inferenceOnly, whether the matmul kernel reads each group of weights ahead of
   * multiplying it (kernels/matmul.ts, section 5), for this model (its matmulPlan): 'on',
   * 'off', or 'auto' (the default), where a model large enough to stream from memory has the
   * kernel timed both ways on its weights and keeps the faster (tuneMatMul; a model of the
   * same shapes and format loaded before in the process gives its choice without timing).
   */
  readAhead?: ReadAheadSetting;
  /**
   * With inferenceOnly, how the matmul kernel runs a single row (section 2): 'narrow', 'wide',
   * or 'paired': f32 and bf16 weights are laid out in pairs of panels (section 9), which one
   * row streams faster and a batch a little slower, for a process that decodes one sequence at
   * a time; or 'auto' (the default), chosen as readAhead is, pairs included: the weights stay
   * in pairs where they speed one row up more than they slow 4 rows down (tuneMatMul). Every
   * choice gives the same products to the bit.
   */
  oneRowTile?: OneRowTileSetting;
  /**
   * How many threads every projection is divided between, for the whole process
   * (kernels/matmul-threads.ts): the packed weights are then kept once in a memory they
   * share. Default 1. A process that decodes or trains on all of a machine's cores sets their
   * number. Training divides its forward products (LoRA's deltas included) and its input
   * gradients through the frozen weights (f32 panels); the LoRA backward is divided from
   * DIVIDED_BACKWARD_THREADS threads on (kernels/lora.ts), below that it runs on the calling
   * thread beside the helpers' dx.
   */
  matmulThreads?: number;
  /**
   * With inferenceOnly, how the projections' weights are held: 'checkpoint' (the default) as
   * the checkpoint stores them (f32, or bf16 when every weight is one), or 'q8', quantized at
   * load to 8 bits in blocks of 32 with one scale each (the Q8_0 layout; kernels/matmul.ts,
   * section 8): a quarter of the f32 bytes and faster decoding, at the cost of logits and
   * logprobs that differ from f32 within the bound docs/benchmarks.md gives. Ignored without
   * inferenceOnly: training and its logprobs stay on the checkpoint's weights.
   */
  weights?: WeightsSetting;
}

export async function loadModel(dir: string, options: LoadOptions = {}): Promise<LoadedModel> {
  const config = parseModelConfig(readJson(dir, 'config.json'), path.join(dir, 'config.json'));
  const { tokenizer, chatTemplate } = readTokenizerFiles(dir);
  // Optional: plenty of real checkpoints ship without one; config.json then has the eos ids.
  const generationConfig = parseGenerationConfig(
    fs.existsSync(path.join(dir, 'generation_config.json')) ? readJson(dir, 'generation_config.json') : {},
  );

  const checkpoint = new Checkpoint(dir);
  let model: LlamaModel;
  try {
    const stored = checkpoint.dtypeOf('model.embed_tokens.weight');
    const tooLarge = tooLargeToTrainOnWasm(config, dir, options) ?? tooLargeToServeOnWasm(config, dir, options, stored);
    if (tooLarge) throw tooLarge;
    startMatMulThreads(options.matmulThreads ?? 1);
    model = buildModel(config, checkpoint, options);
  } catch (err) {
    throw wasmMemoryExceeded(err, config, dir, options) ?? err;
  } finally {
    checkpoint.close();
  }
  if (options.inferenceOnly) {
    try {
      planMatMul(model, options);
    } catch (err) {
      model.dispose();
      throw wasmMemoryExceeded(err, config, dir, options) ?? err;
    }
  }

  const eosToken = tokenizer.specialToken('eos_token');
  const eosFromTokenizer = eosToken ? tokenizer.tokenToId(eosToken) : undefined;
  const eosTokenIds = [
    ...new Set([
      ...generationConfig.eosTokenIds,
      ...config.eosTokenIds,
      ...(eosFromTokenizer !== undefined ? [eosFromTokenizer] : []),
    ]),
  ];
  const prompt = new ChatPrompt(tokenizer, chatTemplate, config.maxPositionEmbeddings);
  return { dir, config, generationConfig, model, tokenizer, chatTemplate, prompt, eosTokenIds, dispose: () => model.dispose() };
}

/** WebAssembly's 32-bit memories: what the wasm backend's heap, and the matmul threads' shared weights, can hold at most. */
const WASM_MEMORY_GIB = 4;

/**
 * A model too large for the wasm backend's memory, told as the limit it met rather than as the
 * RangeError a memory that cannot grow any further throws (a bare "offset is out of bounds"),
 * with what makes it fit: 8-bit weights, the matmul threads (whose packed weights live in a
 * memory of their own) or a GPU worker. Null for any other failure.
 */
export function wasmMemoryExceeded(err: unknown, config: ModelConfig, dir: string, options: LoadOptions): ModelLoadError | null {
  // A memory that cannot grow: a RangeError where tfjs grows it, a RuntimeError where a kernel writes past its end.
  const outOfMemory = err instanceof RangeError || (err instanceof Error && err.name === 'RuntimeError' && /memory access out of bounds/.test(err.message));
  if (!outOfMemory || tf.getBackend() !== 'wasm') return null;
  const billions = (parameterCount(config) / 1e9).toFixed(2);
  const held = options.inferenceOnly && options.weights === 'q8' ? 'as 8-bit weights' : 'as its checkpoint stores them';
  return new ModelLoadError(
    `does not fit in the wasm backend's ${WASM_MEMORY_GIB} GiB of memory (WebAssembly's 32-bit limit): its ${billions}B parameters ${held} ran out of room (${err.message}); ` +
      'serve it with 8-bit weights, with MATMUL_THREADS of 2 or more (the packed weights then have a memory of their own), or on a GPU worker',
    path.join(dir, 'config.json'),
  );
}

/**
 * Most bytes of f32 weights a model to train may have on the wasm backend: training holds every
 * weight as f32 (LoRA's gradients flow through them) in a 4 GiB memory that the step's
 * activations share. A 1.24B model (4.96 GB of f32 weights) loads past it with a corrupted heap
 * (its first free fails with "memory access out of bounds"; libs/engine/bench/model-sizes.bench.ts),
 * so the loader refuses it up front.
 */
const WASM_TRAINING_WEIGHT_BYTES = 3 * 2 ** 30;

/** A model too large to train on the wasm backend, as a clear load error; null when it fits or is not trained there. */
export function tooLargeToTrainOnWasm(config: ModelConfig, dir: string, options: LoadOptions): ModelLoadError | null {
  if (options.inferenceOnly || tf.getBackend() !== 'wasm') return null;
  const bytes = parameterCount(config) * 4;
  if (bytes <= WASM_TRAINING_WEIGHT_BYTES) return null;
  const gib = (n: number) => (n / 2 ** 30).toFixed(1);
  return new ModelLoadError(
    `is too large to train on the wasm backend: its ${(parameterCount(config) / 1e9).toFixed(2)}B parameters take ${gib(bytes)} GiB as f32 weights, ` +
      `above the ${gib(WASM_TRAINING_WEIGHT_BYTES)} GiB a training worker's ${WASM_MEMORY_GIB} GiB wasm memory holds beside a step's activations; train it on a GPU worker`,
    path.join(dir, 'config.json'),
  );
}

/**
 * A model too large to serve on the wasm backend's one memory, as a clear load error; null when
 * it may fit. With one matmul thread the packed weights share the 4 GiB memory with the
 * embeddings, the KV caches and the activations: weights past WASM_SERVING_WEIGHT_BYTES (held
 * as stored: 4 bytes a parameter for an f32 checkpoint, 2 for bf16 or f16; 34/32 for q8) do not load
 * (Qwen3-1.7B's shape in bf16 failed with "memory access out of bounds";
 * libs/engine/bench/model-sizes.bench.ts). With matmul threads the packed weights have a memory
 * of their own, and what does not fit there is told by wasmMemoryExceeded.
 */
export function tooLargeToServeOnWasm(config: ModelConfig, dir: string, options: LoadOptions, storedDtype = 'BF16'): ModelLoadError | null {
  if (!options.inferenceOnly || (options.matmulThreads ?? 1) > 1 || tf.getBackend() !== 'wasm') return null;
  const q8 = options.weights === 'q8';
  const bytesPerParameter = q8 ? 34 / 32 : storedDtype === 'F32' ? 4 : 2;
  const bytes = parameterCount(config) * bytesPerParameter;
  if (bytes <= WASM_SERVING_WEIGHT_BYTES) return null;
  const gib = (n: number) => (n / 2 ** 30).toFixed(1);
  return new ModelLoadError(
    `does not fit in the wasm backend's ${WASM_MEMORY_GIB} GiB of memory (WebAssembly's 32-bit limit): its ${(parameterCount(config) / 1e9).toFixed(2)}B parameters take at least ${gib(bytes)} GiB ` +
      `${q8 ? 'as 8-bit weights' : bytesPerParameter === 4 ? 'as 32-bit weights' : 'as 16-bit weights'}, above the ${gib(WASM_SERVING_WEIGHT_BYTES)} GiB one memory holds beside the embeddings and KV caches; ` +
      `${q8 ? '' : 'serve it with 8-bit weights (WEIGHTS=q8), '}with MATMUL_THREADS of 2 or more (the packed weights then have a memory of their own), or on a GPU worker`,
    path.join(dir, 'config.json'),
  );
}

/** Most bytes of packed weights one wasm memory holds with its embeddings, KV caches and activations. */
const WASM_SERVING_WEIGHT_BYTES = 3 * 2 ** 30;

/** Parameters of a model of this config: embeddings, every layer's projections and norms, the lm_head unless tied. */
export function parameterCount(config: ModelConfig): number {
  const { hiddenSize: C, intermediateSize: I, numHeads: H, numKvHeads: KV, headDim: D, vocabSize: V, numLayers: L } = config;
  const attention = C * (H + 2 * KV) * D + H * D * C;
  const mlp = 3 * C * I;
  return V * C * (config.tieWordEmbeddings ? 1 : 2) + L * (attention + mlp + 2 * C) + C;
}

/**
 * The 16-bit dtype a projection's weight is held in, or null for f32: on webgpu (unless
 * gpuWeights asks for f32), where every tensor of the projection is stored in the same 16-bit
 * dtype and its output columns pair up. Serving and LoRA training read such weights alike.
 */
function halfHeld(options: LoadOptions, stored: string[], outFeatures: number): HalfDtype | null {
  if (tf.getBackend() !== 'webgpu' || (options.gpuWeights ?? 'checkpoint') === 'f32' || outFeatures % 2 !== 0) return null;
  const dtype = stored[0];
  return (dtype === 'BF16' || dtype === 'F16') && stored.every((d) => d === dtype) ? dtype : null;
}

/** Reads every tensor the config calls for, checking shapes, into a LlamaModel. */
export function buildModel(config: ModelConfig, checkpoint: Checkpoint, options: LoadOptions = {}): LlamaModel {
  const { hiddenSize: C, intermediateSize: I, numHeads: H, numKvHeads: KV, headDim: D, vocabSize: V } = config;
  const created: tf.Tensor[] = [];
  const linears: FrozenLinear[] = [];
  const track = <T extends tf.Tensor>(t: T) => {
    created.push(t);
    return t;
  };
  /** A projection the model will own; with inferenceOnly, packed and its [in, out] copy freed before the next weight is read, so that the next copy reuses this one's space. */
  const frozen = (l: FrozenLinear) => {
    linears.push(l);
    if (options.inferenceOnly) l.releaseForInference(options.weights === 'q8' ? 'q8' : 'auto');
    return l;
  };
  const eps = track(tf.scalar(config.rmsNormEps));
  /**
   * An RMSNorm's weight: Gemma's norms scale by 1 + w, stored here as that sum (a float32 add,
   * as transformers computes it), so that every norm runs the same kernel.
   */
  const norm = (name: string, size: number) => {
    const w = checkpoint.read(name, [size]).data;
    if (config.normUnitOffset) w.forEach((v, i) => (w[i] = 1 + v));
    return new RMSNorm(track(tf.tensor1d(w)), eps, config.rmsNormEps);
  };

  /**
   * A projection's weight [in, out] as the model holds it: f32, or on webgpu, where every tensor
   * it comes from is stored in one 16-bit dtype, in that dtype (halfHeld).
   */
  const weightOf = (transposed: Float32Array, inFeatures: number, out: number, stored: string[]): tf.Tensor2D | HalfWeight => {
    const half = halfHeld(options, stored, out);
    return half ? { pairs: tf.tensor2d(halfPairs(transposed, half), [inFeatures, out / 2], 'int32'), dtype: half } : tf.tensor2d(transposed, [inFeatures, out]);
  };

  /** Several HF linears [out_i, in] stacked along out, stored transposed [in, sum out]. */
  const linear = (prefix: string, parts: LinearPart[], inFeatures: number, bias: boolean) => {
    const out = parts.reduce((s, p) => s + p.outFeatures, 0);
    // Each part is transposed straight into its columns of the final [in, out] buffer: one
    // tensor-sized read buffer at a time, no stacked [out, in] copy.
    const transposed = new Float32Array(out * inFeatures);
    const biases = bias ? new Float32Array(out) : null;
    let row = 0;
    for (const p of parts) {
      const name = prefix ? `${prefix}.${p.name}` : p.name;
      transposeInto(checkpoint.read(`${name}.weight`, [p.outFeatures, inFeatures]).data, p.outFeatures, inFeatures, transposed, out, row);
      if (biases) biases.set(checkpoint.read(`${name}.bias`, [p.outFeatures]).data, row);
      row += p.outFeatures;
    }
    const stored = parts.map((p) => checkpoint.dtypeOf(`${prefix ? `${prefix}.${p.name}` : p.name}.weight`));
    return frozen(new FrozenLinear(parts, inFeatures, weightOf(transposed, inFeatures, out, stored), biases ? tf.tensor1d(biases) : null));
  };

  try {
    const rope = new Rope(config);
    const window = config.slidingWindow;
    const slidingRope = window ? new Rope(config, { theta: window.ropeTheta, scaling: null }) : null;
    const embedding = checkpoint.read('model.embed_tokens.weight', [V, C]).data;
    const blocks: Block[] = [];
    for (let i = 0; i < config.numLayers; i++) {
      const p = `model.layers.${i}`;
      const qkv = linear(
        `${p}.self_attn`,
        [
          { name: 'q_proj', outFeatures: H * D },
          { name: 'k_proj', outFeatures: KV * D },
          { name: 'v_proj', outFeatures: KV * D },
        ],
        C,
        config.qkvBias,
      );
      const o = linear(`${p}.self_attn`, [{ name: 'o_proj', outFeatures: C }], H * D, config.oBias);
      const gateUp = linear(
        `${p}.mlp`,
        [
          { name: 'gate_proj', outFeatures: I },
          { name: 'up_proj', outFeatures: I },
        ],
        C,
        false,
      );
      const down = linear(`${p}.mlp`, [{ name: 'down_proj', outFeatures: C }], I, false);
      const headNorms = config.qkNorm ? new HeadNorms(norm(`${p}.self_attn.q_norm.weight`, D), norm(`${p}.self_attn.k_norm.weight`, D), config) : null;
      const attention = new Attention(config, i, window?.layers[i] ? (slidingRope as Rope) : rope, qkv, o, headNorms);
      // Gemma 3 calls its norm on the attention's output post_attention_layernorm, and the one before the MLP pre_feedforward_layernorm.
      const block = config.sandwichNorms
        ? new Block(norm(`${p}.input_layernorm.weight`, C), attention, norm(`${p}.pre_feedforward_layernorm.weight`, C), new MLP(gateUp, down, config.hiddenAct), {
            afterAttention: norm(`${p}.post_attention_layernorm.weight`, C),
            afterMlp: norm(`${p}.post_feedforward_layernorm.weight`, C),
          })
        : new Block(norm(`${p}.input_layernorm.weight`, C), attention, norm(`${p}.post_attention_layernorm.weight`, C), new MLP(gateUp, down, config.hiddenAct));
      blocks.push(block);
    }
    const finalNorm = norm('model.norm.weight', C);
    let lmHead: FrozenLinear;
    if (config.tieWordEmbeddings) {
      const weight = weightOf(transpose2d(embedding, V, C), C, V, [checkpoint.dtypeOf('model.embed_tokens.weight')]);
      lmHead = frozen(new FrozenLinear([{ name: 'lm_head', outFeatures: V }], C, weight));
    } else {
      lmHead = linear('', [{ name: 'lm_head', outFeatures: V }], C, false);
    }
    const table = EmbeddingTable.of(embedding, C, checkpoint.dtypeOf('model.embed_tokens.weight'));
    return new LlamaModel(config, { embedding: table, embeddingScale: embeddingScale(config, checkpoint), blocks, finalNorm, lmHead, rope, slidingRope, extra: [eps] });
  } catch (err) {
    for (const t of created) t.dispose();
    for (const l of linears) l.dispose();
    throw err;
  }
}

/**
 * Gemma multiplies embeddings by sqrt(hidden) cast to the embedding weight's dtype: 25.25
 * rather than 25.298 for a bf16 Gemma 3 270M. The checkpoint's stored dtype stands for it (the
 * dtype transformers loads it in by default). 1 for the other families.
 */
function embeddingScale(config: ModelConfig, checkpoint: Checkpoint): number {
  if (!config.scaleEmbeddings) return 1;
  const stored = checkpoint.dtypeOf('model.embed_tokens.weight');
  return roundTo(Math.sqrt(config.hiddenSize), stored === 'BF16' || stored === 'F16' ? (stored as StorageDtype) : 'F32');
}

/**
 * Writes the transpose of `values` ([rows, cols]) into `out`, a row-major matrix of `outCols`
 * columns, from column `colOffset` on: out[c][colOffset + r] = values[r][c]. Puts several HF
 * [out_i, in] weights side by side in one [in, sum out] buffer without a stacked copy.
 */
function transposeInto(values: Float32Array, rows: number, cols: number, out: Float32Array, outCols: number, colOffset: number): void {
  const block = 64;
  for (let r0 = 0; r0 < rows; r0 += block) {
    for (let c0 = 0; c0 < cols; c0 += block) {
      const rEnd = Math.min(r0 + block, rows);
      const cEnd = Math.min(c0 + block, cols);
      for (let r = r0; r < rEnd; r++) {
        const src = r * cols;
        const dst = colOffset + r;
        for (let c = c0; c < cEnd; c++) out[c * outCols + dst] = values[src + c];
      }
    }
  }
}

/** Gives the model its matmul plan: the settings that `options` fix, and the rest timed by the kernel on the model's weights. */
function planMatMul(model: LlamaModel, options: LoadOptions): void {
  const fixed: Partial<MatMulPlan> = {};
  const readAhead = options.readAhead ?? 'auto';
  if (readAhead !== 'auto') fixed.oneRowReadAhead = fixed.rowsReadAhead = readAhead === 'on';
  // tuneMatMul re-lays the weights in pairs for 'paired', and may for 'auto': an inference-only
  // model has no transposed products, which read panels apart only.
  const oneRowTile = options.oneRowTile ?? 'auto';
  if (oneRowTile !== 'auto') fixed.oneRowTile = oneRowTile;
  model.matmulPlan = tuneMatMul(model.packedWeights(), fixed, { mayPair: oneRowTile === 'auto' });
}
