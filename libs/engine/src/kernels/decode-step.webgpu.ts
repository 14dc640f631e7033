/// <reference types="@webgpu/types" />
import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config';
import type { StorageDtype } from '../dtype';
import { readChecked } from '../gpu-faults';
import type { KVCache } from '../model/kv-cache';
import type { LlamaModel } from '../model/llama';
import type { FrozenLinear } from '../model/linear';
import { inverseFrequencies } from '../model/rope';
import { ForwardTiles, forwardTiles } from './attention.wgsl';
import {
  attentionShader,
  COLUMN_PART,
  combineColumnsShader,
  embedShader,
  promptAttentionShader,
  finishResidualShader,
  finishSwigluShader,
  flatGrid,
  LinearAdapters,
  linearShader,
  MAX_HEAD_DIM,
  MAX_LORA_RANK,
  MAX_SPLITS,
  ropeAttentionColumnsShader,
  ropeAttentionShader,
  ropeNormStoreShader,
  ropeStoreShader,
  SAMPLE_SHADER,
  TILE_K,
  tiledLinearShader,
  tiledXAWorkgroups,
  WORKGROUP,
} from './decode-step.wgsl';
import type { GpuTable } from './embedding-rows.webgpu';
import { EmbeddingSource, embeddingSourceKey } from './half-weights.wgsl';
import type { LoraPart } from './lora';
import type { DrawnToken, RowDraw } from './sample';
import { StepRopeTables } from './step-rope-tables';
import { ProductTiling, productTiling, SPLIT_DEPTH, tileKey, usedSubgroupMatrices } from './tiled-product.wgsl';
import { fusedKernelsApply, workgroupMemoryLimit } from './webgpu-program';

/**
 * A whole forward step of a Llama-family model on webgpu (decoding one token a row, or a
 * prompt's chunk), encoded by the engine rather than op by op through tfjs. A step first reads
 * its tokens' embeddings, and their 1/rms for the first norm, on the GPU (one dispatch): a tied
 * model's from the lm_head, which holds the embedding table transposed, an untied model's from
 * the table's own GPU copy (EmbeddingTable.onGpu). Per layer of a
 * decoding step, eight dispatches: the q|k|v product (input RMSNorm folded in); attention over
 * the cache, which first does RoPE's work for its token (sums that product's K splits, adds its
 * bias, rotates q and k, and writes the KV cache's new column in place); the output product;
 * its sum into the residual stream (with the next norm's 1/rms); the gate|up product
 * (post-attention RMSNorm folded in); SwiGLU over its splits; the down product; its sum into
 * the residual stream. A step of a few rows over a long cache splits each row's columns among
 * workgroups (columnSplits) and adds their parts up in one more dispatch: nine. A prompt's
 * chunk, several new tokens a row, attends to new columns that other workgroups write, so
 * RoPE runs on its own before attention there: nine, and ten where a long prompt's chunk
 * splits its columns too. Then the
 * lm_head product (final norm folded in) on each row's last token and, for stepDrawn, the next
 * token drawn on the GPU. Everything goes in one command buffer and one queue submit, and only
 * each row's token and logprob come back; a run of steps (stepsDrawn) feeds each step the
 * tokens the one before drew without their coming back, and reads all of them back at its end.
 * The other families' differences ride on the same dispatches: Qwen3's and Gemma 3's q_norm
 * and k_norm in the programs that do RoPE's work, Gemma 3's norms on the attention's and the
 * MLP's outputs in the residual sums, its GeGLU in SwiGLU's place, and its sliding-window
 * layers' own RoPE tables and mask.
 *
 * Products are split along K (linearShader) so that a decoding step's narrow products, a few
 * hundred output columns at batch 1, still spread over the whole GPU; the split count is chosen
 * per step from the product's size (splitsFor). A step of at least a tile's rows of tokens (a
 * prompt's chunk of 64 tokens, a batch of 64 rows) can instead take the training step's tiled
 * products, split fewer times (tiledLinearShader): as setStepProducts says, and always while
 * products take tensor cores, which only the tiles have (with adapters too: below). A product's splits are summed by the program
 * after it, so fusing means giving that program more work: RoPE folded into attention costs
 * each query head a sum of its KV head's splits (read where the q|k|v product just wrote them,
 * small beside the cache that attention reads) and no extra pass over memory. The SwiGLU sum
 * stays a program of its own: folded into the down product's input, every down workgroup would
 * read 2 x (gate|up's splits) partials for each input it now reads once; with splitsFor's
 * splits, as many floats as the down weight itself for Qwen2.5-0.5B's shape at batch 32 and for
 * SmolLM2-135M's at batch 128 (four times as many at 32), on top of a product that at large
 * batches already reads its weight once per row tile; and capping gate|up's splits to avoid
 * that would leave gate|up a fraction of the workgroups it needs.
 *
 * The model's weights and the KV cache stay the tfjs tensors they are (their GPUBuffers are
 * bound directly); the pipelines are compiled once per device, the weights' bind groups made
 * once per model (one step a model, shared by its batches: `for`), and a layer's cache bind
 * groups again only when the cache replaces its tensors (KVCache.reserve, another batch's cache);
 * each shape of step records from a dispatch list made on its first step (`prepared`). tfjs's
 * own queued work is submitted first, so a step sees what tfjs wrote.
 *
 * LoRA adapters (one for every row, or several routed row by row by LoraRouter) run in the step
 * too, two dispatches more a layer (ADAPTER_MODE): q|k|v and gate|up make x A in a product of
 * its own and add (x A) B in their first split; o and down make x A in extra workgroups of
 * their own dispatch and the residual sum after them adds (x A) B. In tiles, the first split's
 * store adds each element's (x A) B, from an x A made unsplit, and o's and down's x A is made
 * over each split of K in workgroups after the tiles (tiledLinearShader). It applies to Llama and
 * Qwen2 with float32 weights, a bias on q, k and v only, output widths that are multiples of 4
 * and head dimensions up to MAX_HEAD_DIM (`for` and `applies` say where not). The same logits
 * as the tfjs path to float rounding (summed in another order).
 */

interface WebGpuBackendInternals {
  device: GPUDevice;
  queue: GPUQueue;
  /** The encoder tfjs records into, null while nothing is queued. */
  commandEncoder: GPUCommandEncoder | null;
  endComputePassEncoder(): void;
  submitQueue(): void;
  uploadToGPU(dataId: object): void;
  tensorMap: { get(dataId: object): { resource?: unknown } };
}

/** A projection's weight, how it is held (f32, or 16 bits a value), and its sizes: in features (K) and out features (N). */
interface LinearWeights {
  weight: GPUBuffer;
  dtype: StorageDtype;
  k: number;
  n: number;
}

interface LayerWeights {
  inputNorm: GPUBuffer;
  postNorm: GPUBuffer;
  qkv: LinearWeights;
  /** The q|k|v bias, zeros where the model has none. */
  qkvBias: GPUBuffer;
  /** Qwen3's and Gemma 3's q_norm then k_norm weights [2 D], null where the model has none. */
  headNorms: GPUBuffer | null;
  /** Gemma 3's norms on the attention's and the MLP's outputs, null where the model has none. */
  sandwich: { afterAttention: GPUBuffer; afterMlp: GPUBuffer } | null;
  /** Whether the layer attends within the sliding window (its own RoPE tables and mask). */
  windowed: boolean;
  o: LinearWeights;
  gateUp: LinearWeights;
  down: LinearWeights;
}

/**
 * The programs over a layer's KV cache: a prompt's RoPE and attention, a decoding step's
 * attention with RoPE's work in it, each over all of a row's columns or in column splits.
 */
type CacheProgram = 'rope' | 'attention' | 'attentionColumns' | 'ropeAttention' | 'ropeAttentionColumns';

/** The cache programs of a step of T tokens a row whose attention takes `columnSplits` splits of the columns. */
function cachePrograms(T: number, columnSplits: number): CacheProgram[] {
  if (T > 1) return ['rope', columnSplits > 1 ? 'attentionColumns' : 'attention'];
  return [columnSplits > 1 ? 'ropeAttentionColumns' : 'ropeAttention'];
}

/**
 * Per layer, the cache tensors its bind groups were made for, and the bind groups made so far:
 * each when a step first runs its program over these tensors (a prompt's cache is bound for
 * its chunks alone, a batch's for its decoding steps).
 */
interface LayerBinding {
  keys: tf.Tensor4D;
  values: tf.Tensor4D;
  uniform: GPUBuffer;
  groups: Partial<Record<CacheProgram, GPUBindGroup>>;
}

/** Bind groups of one layer's products and the programs that sum them, over the activation buffers. */
interface LayerGroups extends Record<ProductKind, GPUBindGroup> {
  finishO: GPUBindGroup;
  swiglu: GPUBindGroup;
  finishDown: GPUBindGroup;
}

type Binding = 'uniform' | 'read' | 'write';

type ProductKind = 'qkv' | 'o' | 'gateUp' | 'down';

const PRODUCTS: readonly ProductKind[] = ['qkv', 'o', 'gateUp', 'down'];

/** Whether a product's input is RMSNorm'd on the way in. */
const NORMED: Record<ProductKind, boolean> = { qkv: true, o: false, gateUp: true, down: false };

/**
 * Where each product's adapters run, x A into loraIn and then (x A) B. 'addDelta': x A is a
 * product of its own before the product, whose first split adds (x A) B, once per row tile;
 * q|k|v and gate|up take it, since their splits are summed a thread per output (RoPE in
 * attention, SwiGLU), where the delta would read B once per row. 'makeXA': the product makes x A
 * in workgroups past its own column tiles (split along K like it), and finishResidual, one
 * workgroup a row, adds (x A) B: one dispatch fewer each for o and down, for B [rank, C] read
 * once per row rather than once per row tile, rank x R / K as much as the product's weight
 * reads (R rows a tile, K its in features): small for down (K = I) and, at ranks well under
 * K / R, for o; B is small enough to stay in cache.
 */
const ADAPTER_MODE: Record<ProductKind, Exclude<LinearAdapters, 'none'>> = { qkv: 'addDelta', o: 'makeXA', gateUp: 'addDelta', down: 'makeXA' };

/**
 * A product's low-rank adapters as the step runs them: A of every adapted part side by side
 * [K, rank] (loraIn = x A) and B block-diagonal [rank, N] with alpha / r folded in, placed as
 * ADAPTER_MODE says.
 */
interface ProductLora {
  /** The parts' A tensors these were made from: made again when the model's adapters change. */
  from: tf.Tensor[];
  a: tf.Tensor2D;
  b: tf.Tensor2D;
  rank: number;
  /** The adapter (its column of rowAdapters) of each rank column, as last written, and where. */
  rankAdapter: Uint32Array;
  rankAdapterBuffer: GPUBuffer;
  /**
   * Bind groups of the product with its adapters, and of the x A product before it (addDelta)
   * or of the residual sum after it (makeXA); null until made over the current buffers.
   */
  groups: { product: GPUBindGroup; xA?: GPUBindGroup; finish?: GPUBindGroup } | null;
}

/** Bind group layouts shared by every variant of a program, so one bind group serves them all. */
const LAYOUTS = {
  linear: ['uniform', 'read', 'read', 'write'],
  linearNorm: ['uniform', 'read', 'read', 'write', 'read', 'read'],
  linearNormAddDelta: ['uniform', 'read', 'read', 'write', 'read', 'read', 'read', 'read', 'uniform', 'read'],
  linearMakeXA: ['uniform', 'read', 'read', 'write', 'read', 'write'],
  finishResidual: ['uniform', 'read', 'read', 'write', 'write'],
  finishResidualLora: ['uniform', 'read', 'read', 'write', 'write', 'read', 'read', 'uniform', 'read'],
  // finishResidual's and finishResidualLora's, then the norm on the product (Gemma 3's sandwich norms).
  finishResidualNorm: ['uniform', 'read', 'read', 'write', 'write', 'read'],
  finishResidualLoraNorm: ['uniform', 'read', 'read', 'write', 'write', 'read', 'read', 'uniform', 'read', 'read'],
  finishSwiglu: ['uniform', 'read', 'write'],
  embed: ['uniform', 'read', 'read', 'write', 'write'],
  rope: ['uniform', 'uniform', 'read', 'read', 'write', 'write', 'write', 'read'],
  attention: ['uniform', 'uniform', 'read', 'read', 'read', 'read', 'write'],
  ropeAttention: ['uniform', 'uniform', 'read', 'write', 'write', 'read', 'write', 'read', 'read'],
  // rope's and ropeAttention's, then the q_norm and k_norm weights side by side (Qwen3, Gemma 3; one buffer: ropeAttention already binds 7 of the 8 storage buffers).
  ropeNorm: ['uniform', 'uniform', 'read', 'read', 'write', 'write', 'write', 'read', 'read'],
  ropeAttentionNorm: ['uniform', 'uniform', 'read', 'write', 'write', 'read', 'write', 'read', 'read', 'read'],
  sample: ['uniform', 'read', 'read', 'write', 'write'],
  combineColumns: ['uniform', 'read', 'write'],
} satisfies Record<string, Binding[]>;

type ProgramKind = keyof typeof LAYOUTS;

/** Pipelines of one device: their layouts, and each program variant compiled on first use. */
interface Pipelines {
  layouts: Record<ProgramKind, GPUBindGroupLayout>;
  compiled: Map<string, GPUComputePipeline>;
}

const pipelinesByDevice = new WeakMap<GPUDevice, Pipelines>();

/** The model families whose block the step computes. */
const STEP_FAMILIES: readonly string[] = ['llama', 'qwen2', 'qwen3', 'gemma3_text'];

/** GPUBufferUsage's flags (fixed by the WebGPU specification; the globals exist only once Dawn is installed). */
const USAGE = { mapRead: 0x01, copySrc: 0x04, copyDst: 0x08, uniform: 0x40, storage: 0x80 } as const;

/** Workgroups a product aims for: enough to keep every multiprocessor's memory requests going. */
const TARGET_WORKGROUPS = 512;

/** Bytes of the buffer every product writes its partial sums to. */
const PARTIAL_BYTES = 64 << 20;

/** Most column splits of a step's attention, and fewest columns a split walks: four of a decoding step's workgroup's blocks. */
const MAX_COLUMN_SPLITS = 32;
const MIN_SPLIT_COLUMNS = 4 * WORKGROUP;

/** Whether a step's attention may split its columns among workgroups (columnSplits); benches measure both. */
let splitColumns = true;

/** Sets whether steps from now on may split their attention's columns (the default) or walk each row's in one workgroup. */
export function setColumnSplits(on: boolean): void {
  splitColumns = on;
}

/**
 * How many splits a step's attention takes of the columns (1: none), where unsplit its grid is
 * `workgroups` workgroups and the longest walks `columns` columns: doubled while the grid stays
 * within TARGET_WORKGROUPS and each split walks at least MIN_SPLIT_COLUMNS columns. A
 * decoding step of N rows makes N x H workgroups over the cached columns; a prompt's chunk of T
 * tokens a row, H x rows x ceil(T / TQ) (a tile of TQ tokens a workgroup, forwardTiles) over
 * the cached columns and its own. A step of few rows, or a long prompt's later chunks, then keep
 * enough workgroups in flight; a wide batch or a short cache takes none, and a decoding step
 * its eight dispatches a layer.
 */
export function columnSplits(workgroups: number, columns: number): number {
  let splits = 1;
  while (splitColumns && splits < MAX_COLUMN_SPLITS && workgroups * splits * 2 <= TARGET_WORKGROUPS && columns / (splits * 2) >= MIN_SPLIT_COLUMNS) splits *= 2;
  return splits;
}

type Activations = Record<'ids' | 'x' | 'h' | 'rinv' | 'partial' | 'loraIn' | 'rowAdapters' | 'q' | 'heads' | 'columnParts' | 'act' | 'logits' | 'tables' | 'slidingTables' | 'draws' | 'drawn', GPUBuffer>;

/** Readback buffers a step keeps for the next reads, at most. */
const KEPT_READ_BUFFERS = 4;

/** Each model's step on the device it was made for: made on first use, released with the model (LlamaModel.onDispose). */
const stepsByModel = new WeakMap<LlamaModel, WebGpuDecodeStep>();

/** Most dispatches a layer records: ten for a prompt's chunk whose attention splits its columns (RoPE apart from attention, and the parts' sum), and the x A products of q|k|v and gate|up where they have adapters. */
const DISPATCHES_PER_LAYER = 10 + 2;

/** Layer uniforms (a cache's capacity) a step keeps for the caches it binds. */
const KEPT_LAYER_UNIFORMS = 32;

/** Shapes of step (rows, tokens a row) whose dispatch lists a step keeps. */
const KEPT_PREPARED_STEPS = 16;

/** How a step is encoded: fed the ids the step before drew (stepsDrawn), or each dispatch timed (profile). */
interface EncodeOptions {
  fed?: boolean;
  timing?: { querySet: GPUQuerySet; labels: string[] };
}

/** One dispatch of a step as recorded: what it computes (profile's label), its pipeline, bind group and grid. */
interface Dispatch {
  label: string;
  pipeline: GPUComputePipeline;
  group: GPUBindGroup;
  x: number;
  y: number;
  z: number;
}

/** How a step's products run: each layer product's plan, the x A products' before those with adapters added after them, and the lm_head's. */
interface StepPlans {
  products: Record<ProductKind, ProductPlan>;
  xA: Partial<Record<ProductKind, ProductPlan>>;
  head: ProductPlan;
}

/** A step of one shape, ready to record: its plans and its dispatches in order, the lm_head's last. */
interface PreparedStep {
  plans: StepPlans;
  dispatches: Dispatch[];
}

/** Most adapters sharing one step row by row (LoraRouter). */
const MAX_ADAPTERS = 16;

/** Bytes of every uniform buffer here. */
const UNIFORM_BYTES = 48;

/** Rows a linear workgroup computes for `rows` inputs: enough to cover small batches in one tile, at most 16. */
function rowsPerTile(rows: number): number {
  let r = 1;
  while (r < rows && r < 16) r *= 2;
  return r;
}

/**
 * How a product of `rows` input rows runs: its sizes (in and out features), its row tile, its K
 * splits (a power of two) and the K each split covers; with `tiling`, in the tiles of
 * tiled-product.wgsl.ts (tiledLinearShader, tiledPlan) on that tiling's grid, the splits its z.
 */
interface ProductPlan {
  k: number;
  n: number;
  tile: number;
  splits: number;
  chunk: number;
  columnTiles: number;
  rowTiles: number;
  tiling?: ProductTiling;
}

/**
 * How the products of a step of at least TILED_TOKENS tokens (a prompt's chunk, a batch of that
 * many rows) run: split along K as a few rows' ('split'), or in tiles ('tiled').
 */
export type StepProducts = 'split' | 'tiled';

let stepProducts: StepProducts = 'split';

/**
 * Sets how the products of steps from now on run (benches measure each way). Whatever it says,
 * a step of at least TILED_TOKENS tokens takes tiles while products take tensor cores
 * (WEBGPU_TENSOR_CORES), which only the tiles have.
 */
export function setStepProducts(choice: StepProducts): void {
  stepProducts = choice;
}

/** Fewest tokens of a step (rows times tokens a row) whose products take tiles: one tile's rows; fewer would leave most of each tile empty. */
export const TILED_TOKENS = 64;

/** Whether a step of `rows` rows of T tokens takes its products in tiles (setStepProducts). */
function takesTiles(rows: number, T: number): boolean {
  return rows * T >= TILED_TOKENS && (stepProducts === 'tiled' || usedSubgroupMatrices() !== null);
}

/** Fewest of K a split of a tiled product covers: four steps of its staging. */
const MIN_TILED_SPLIT = 4 * SPLIT_DEPTH;

/**
 * The plan of a product [rows, K] x [K, N] in tiles (productTiling chooses which), split along
 * K (kSplits) with each split covering at least MIN_TILED_SPLIT and a multiple of SPLIT_DEPTH
 * (the last ones may then be empty, and write zeros).
 */
function tiledPlan(rows: number, K: number, N: number, extraWorkgroups = 0): ProductPlan {
  const tiling = productTiling(rows, N);
  const [columnTiles, rowTiles] = tiling.dispatch;
  const splits = kSplits(columnTiles * rowTiles, rows, K, N, MIN_TILED_SPLIT, MAX_SPLITS);
  const chunk = Math.ceil(K / splits / SPLIT_DEPTH) * SPLIT_DEPTH;
  // The extra work's workgroups (a makeXA product's x A) in rows of the grid after the product's.
  const extraRows = Math.ceil(extraWorkgroups / columnTiles);
  return { k: K, n: N, tile: 0, splits, chunk, columnTiles, rowTiles, tiling: { tile: tiling.tile, dispatch: [columnTiles, rowTiles + extraRows, splits] } };
}

/**
 * How many splits of K (a power of two, at most `maxSplits`) a product [rows, K] x [K, N] of
 * `tiles` workgroups a split takes: K split in two until the grid reaches TARGET_WORKGROUPS, a
 * split would cover less than `minSplit` of K, or the partial sums would outgrow their buffer.
 */
function kSplits(tiles: number, rows: number, K: number, N: number, minSplit: number, maxSplits: number): number {
  let splits = 1;
  while (splits < maxSplits && tiles * splits < TARGET_WORKGROUPS && K / (2 * splits) >= minSplit && 2 * splits * rows * N * 4 <= PARTIAL_BYTES) splits *= 2;
  return splits;
}

/** The plan of a product [rows, K] x [K, N] split along K (kSplits), each split covering at least TILE_K rows of the weight. */
function splitsFor(rows: number, K: number, N: number, maxSplits = MAX_SPLITS): ProductPlan {
  const tile = rowsPerTile(rows);
  const columnTiles = Math.ceil(N / 4 / WORKGROUP);
  const rowTiles = Math.ceil(rows / tile);
  const splits = kSplits(columnTiles * rowTiles, rows, K, N, TILE_K, maxSplits);
  return { k: K, n: N, tile, splits, chunk: Math.ceil(K / splits), columnTiles, rowTiles };
}

/** Row `i`'s token and logprob in a read of the sample program's results (pairs of f32). */
function drawnAt(values: Float32Array, i: number): DrawnToken {
  return { id: values[2 * i], logprob: values[2 * i + 1] };
}

export class WebGpuDecodeStep {
  private readonly backend: WebGpuBackendInternals;
  private readonly device: GPUDevice;
  private readonly pipelines: Pipelines;
  private readonly layers: LayerWeights[];
  private readonly finalNorm: GPUBuffer;
  private readonly lmHead: LinearWeights;
  /** Each token's RoPE tables, and the sliding-window layers' (Gemma 3's local base; null without such layers). */
  private readonly ropeTables: StepRopeTables;
  private readonly slidingRopeTables: StepRopeTables | null;
  /** Buffers this step made at load (uniforms, zero biases), destroyed with it. */
  private readonly owned: GPUBuffer[] = [];
  private readonly stepUniform: GPUBuffer;
  private readonly sampleUniform: GPUBuffer;
  /** The uniforms of each product and of the programs that sum them, written per step. */
  private readonly dims: Record<ProductKind | 'lmHead' | 'finishO' | 'finishDown' | 'swiglu', GPUBuffer>;
  /** The uniforms of the x A products (their adapters' first factor) before q|k|v and gate|up; o and down (ADAPTER_MODE makeXA) leave theirs unused. */
  private readonly xADims: Record<ProductKind, GPUBuffer>;
  /** Per layer and product, its adapters (null: none). */
  private lora: Record<ProductKind, ProductLora | null>[] = [];
  /** Tokens (rows times tokens a row) and rows the activation buffers hold. */
  private tokenCapacity = 0;
  private rowCapacity = 0;
  /** Floats the mask buffer holds. */
  private maskCapacity = 0;
  private activations: Activations | null = null;
  private mask: GPUBuffer | null = null;
  /** The sliding-window layers' mask (KVCache.stepMask with the window), the same size; null without such layers. */
  private slidingMask: GPUBuffer | null = null;
  /** Readback buffers free for the next read; each read takes one of its own, so that reads of batches sharing the step never map the same buffer. */
  private readBuffers: GPUBuffer[] = [];
  private disposed = false;
  /** Forgets this step's release in the model's (LlamaModel.onDispose). */
  private readonly forget: () => void;
  private layerBindings: (LayerBinding | null)[] = [];
  /**
   * The layers' uniforms (heads, KV heads, head size, a cache's capacity in columns) by the
   * capacity, kept so that binding a cache whose capacity was bound before, as a batch's after
   * each joining prompt's own, names the same buffers and the device answers with the bind
   * groups it made then (webgpu-bind-groups.ts).
   */
  private readonly layerUniforms = new Map<number, GPUBuffer>();
  private layerGroups: LayerGroups[] = [];
  private headGroup: GPUBindGroup | null = null;
  /** The bind group of the program that adds up a decoding step's column splits of attention. */
  private combineGroup: GPUBindGroup | null = null;
  /** The embeddings' program's bind group. */
  private embedGroup: GPUBindGroup | null = null;
  /** Where a step reads its embeddings: a tied model's lm_head (the table transposed), or an untied model's table on the GPU. */
  private readonly embeddings: { weight: GPUBuffer; source: EmbeddingSource };
  private sampleGroup: GPUBindGroup | null = null;
  /** Bind groups made or dropped so far: a prepared step holds bind groups, and is good while this is as it was when it was made. */
  private bindGroupsMade = 0;
  /** The steps prepared (by rows and tokens a row) at `preparedAt`, and the one whose uniforms were written last. */
  private readonly preparedSteps = new Map<string, PreparedStep>();
  private preparedAt = -1;
  private uniformsOf: PreparedStep | null = null;
  /** Steps encoded so far (stepsEncoded). */
  private encoded = 0;
  /** The cache and rows of the last step encoded, where it was a drawn step whose sample program left its tokens' ids for the next (continues). */
  private drawnInPlace: { cache: KVCache; rows: number; encoded: number } | null = null;

  /**
   * The step for `model` on the webgpu backend now, or null where it does not apply (see the
   * class comment). One step a model, shared by every batch that decodes with it: the weights'
   * bind groups and the activation buffers are made once, not again for each batch (a worker
   * makes a batch whenever a request finds it idle). Batches sharing it take turns: each step
   * is encoded and submitted at once and reads back into a buffer of its own. It is released
   * with the model.
   */
  static for(model: LlamaModel): WebGpuDecodeStep | null {
    if (!fusedKernelsApply()) return null;
    const device = (tf.backend() as unknown as WebGpuBackendInternals).device;
    const known = stepsByModel.get(model);
    if (known?.device === device) return known;
    known?.dispose();
    if (!WebGpuDecodeStep.fits(model)) return null;
    const step = new WebGpuDecodeStep(model);
    stepsByModel.set(model, step);
    return step;
  }

  /** Whether the model's architecture, weights and shape are ones this step runs. */
  static fits(model: LlamaModel): boolean {
    const { modelType, headDim, numHeads, numKvHeads, hiddenSize } = model.config;
    // The step computes these families' blocks exactly: another family's norms or activations would need programs of their own.
    if (!STEP_FAMILIES.includes(modelType)) return false;
    if (headDim % 2 !== 0 || headDim > MAX_HEAD_DIM || numHeads % numKvHeads !== 0 || hiddenSize % 4 !== 0) return false;
    // Weights as f32 [in, out] or held in 16 bits (the programs unpack them), in vec4s of output columns.
    const float32 = (l: FrozenLinear) => (l.halfWeight !== null || (!l.released && l.weightT.dtype === 'float32')) && l.outFeatures % 4 === 0;
    // A bias only on q|k|v (RoPE adds it), as Llama and Qwen2 have.
    const biases = (b: LlamaModel['blocks'][number]) => (b.attention.qkv.bias?.dtype ?? 'float32') === 'float32' && !b.attention.o.bias && !b.mlp.gateUp.bias && !b.mlp.down.bias;
    const products = (b: LlamaModel['blocks'][number]) => PRODUCTS.every((kind) => float32(productOf(b, kind)));
    // q_norm and k_norm (Qwen3, Gemma 3), and Gemma 3's norms on the outputs, in every layer or in none.
    const norms = (b: LlamaModel['blocks'][number]) => (b.attention.headNorms !== null) === model.config.qkNorm && (b.sandwich !== null) === model.config.sandwichNorms;
    return model.blocks.every((b) => products(b) && biases(b) && norms(b)) && float32(model.lmHead) && !model.lmHead.bias;
  }

  /**
   * Whether a step of `tokens` tokens can run now: still webgpu with the kernels on, and the
   * model's adapters (if any) ones it adds itself: low-rank (one for every row, or up to
   * MAX_ADAPTERS routed row by row), their ranks together a multiple of 4 and, per kind of
   * product, the same in every layer; none on the lm_head.
   */
  applies(tokens: number): boolean {
    if (!fusedKernelsApply() || this.model.lmHead.hasAdapters) return false;
    // The base model alone, the common case, applies without a walk over the products' adapters.
    if (!this.anyAdapters()) return true;
    const ranks = new Map<ProductKind, number>();
    const adapters = new Set<string>();
    const fits = this.model.blocks.every((block) =>
      PRODUCTS.every((kind) => {
        const parts = productOf(block, kind).adapterParts(tokens);
        if (!parts) return false;
        if (parts.length === 0) return true;
        for (const part of parts) adapters.add(adapterKey(part));
        const rank = parts.reduce((sum, p) => sum + p.aT.shape[1], 0);
        if (rank % 4 !== 0 || rank > MAX_LORA_RANK || (ranks.get(kind) ?? rank) !== rank) return false;
        ranks.set(kind, rank);
        return true;
      }),
    );
    return fits && adapters.size <= MAX_ADAPTERS;
  }

  private constructor(private readonly model: LlamaModel) {
    this.backend = tf.backend() as unknown as WebGpuBackendInternals;
    this.device = this.backend.device;
    this.pipelines = pipelinesFor(this.device);
    const projection = (linear: FrozenLinear): LinearWeights => {
      const half = linear.halfWeight;
      return { weight: this.buffer(half ? half.pairs : linear.weightT), dtype: half ? half.dtype : 'F32', k: linear.inFeatures, n: linear.outFeatures };
    };
    const owned = (size: number, usage: number) => {
      const buffer = this.create(size, usage);
      this.owned.push(buffer);
      return buffer;
    };
    const qkvWidth = (model.config.numHeads + 2 * model.config.numKvHeads) * model.config.headDim;
    let zeros: GPUBuffer | null = null;
    this.layers = model.blocks.map((block) => ({
      inputNorm: this.buffer(block.inputNorm.weight),
      postNorm: this.buffer(block.postAttentionNorm.weight),
      qkv: projection(block.attention.qkv),
      qkvBias: block.attention.qkv.bias ? this.buffer(block.attention.qkv.bias) : (zeros ??= owned(qkvWidth * 4, USAGE.storage)),
      headNorms: block.attention.headNorms ? this.buffer(block.attention.headNorms.weights) : null,
      sandwich: block.sandwich ? { afterAttention: this.buffer(block.sandwich.afterAttention.weight), afterMlp: this.buffer(block.sandwich.afterMlp.weight) } : null,
      windowed: block.attention.windowed,
      o: projection(block.attention.o),
      gateUp: projection(block.mlp.gateUp),
      down: projection(block.mlp.down),
    }));
    this.finalNorm = this.buffer(model.finalNorm.weight);
    this.lmHead = projection(model.lmHead);
    const { vocabSize: vocab, hiddenSize: hidden } = model.config;
    if (model.config.tieWordEmbeddings) {
      this.embeddings = { weight: this.lmHead.weight, source: { dtype: this.lmHead.dtype, transposed: true, vocab, hidden } };
    } else {
      // A 16-bit table packs in pairs: fits() asks for a hidden size that is a multiple of 4.
      const table = model.embedding.onGpu() as GpuTable;
      const [weight, dtype] = 'pairs' in table ? [table.pairs, table.dtype] : [table, 'F32' as const];
      this.embeddings = { weight: this.buffer(weight), source: { dtype, transposed: false, vocab, hidden } };
    }
    const scale = 1 / Math.sqrt(model.config.queryPreAttnScalar ?? model.config.headDim);
    this.ropeTables = new StepRopeTables(inverseFrequencies(model.config), scale);
    const window = model.config.slidingWindow;
    this.slidingRopeTables = window ? new StepRopeTables(inverseFrequencies(model.config, { theta: window.ropeTheta, scaling: null }), scale) : null;
    const uniform = () => owned(UNIFORM_BYTES, USAGE.uniform | USAGE.copyDst);
    this.stepUniform = uniform();
    this.sampleUniform = uniform();
    this.dims = { qkv: uniform(), o: uniform(), gateUp: uniform(), down: uniform(), lmHead: uniform(), finishO: uniform(), finishDown: uniform(), swiglu: uniform() };
    this.xADims = { qkv: uniform(), o: uniform(), gateUp: uniform(), down: uniform() };
    this.lora = model.blocks.map(() => ({ qkv: null, o: null, gateUp: null, down: null }));
    this.layerBindings = model.blocks.map(() => null);
    this.forget = model.onDispose(() => this.dispose());
  }

  get config(): ModelConfig {
    return this.model.config;
  }

  /**
   * One step of every row of `cache` fed `tokens` (one a row): each row's next token drawn
   * with its draw. The cache grows by one column.
   */
  async stepDrawn(cache: KVCache, tokens: readonly number[], draws: readonly RowDraw[]): Promise<DrawnToken[]> {
    return (await this.stepsDrawn(cache, tokens, [draws]))[0];
  }

  /**
   * `draws.length` steps of every row of `cache`, the first fed `tokens` (one a row) and each
   * later one the tokens the step before it drew, which stay on the GPU (the sample program
   * writes their ids where the embeddings' program reads them): step k's tokens drawn with
   * `draws[k]`. Every step is submitted as soon as it is recorded and the tokens of all are
   * read back once at the end, so the host records step k + 1 while the GPU runs step k, and
   * the GPU never waits for a readback between them. The cache grows by a column a step.
   * `tokens` null feeds the first step too the tokens the last step drew, where that step was
   * this cache's and drawn (continues): their ids need not have come back yet, so a run can be
   * recorded and submitted while the one before it still runs. Everything is recorded and
   * submitted before the returned promise is first awaited.
   */
  async stepsDrawn(cache: KVCache, tokens: readonly number[] | null, draws: readonly (readonly RowDraw[])[]): Promise<DrawnToken[][]> {
    const rows = draws[0]?.length ?? 0;
    if (tokens === null && !this.continues(cache, rows)) throw new Error('decode step: a run fed on the GPU follows a drawn step of the same rows, with no step recorded since');
    const bytes = rows * 8;
    const read = this.readBuffer(bytes * draws.length);
    // Fed steps read the ids in place; only the token count of their rows matters.
    const fedTokens = (tokens ?? draws[0]).map((t) => [typeof t === 'number' ? t : 0]);
    draws.forEach((stepDraws, k) => {
      const encoder = this.encode(cache, fedTokens, true, { fed: k > 0 || tokens === null });
      this.encodeDraws(encoder, stepDraws);
      encoder.copyBufferToBuffer((this.activations as Activations).drawn, 0, read, k * bytes, bytes);
      this.device.queue.submit([encoder.finish()]);
      cache.endStep(1);
    });
    this.drawnInPlace = { cache, rows, encoded: this.encoded };
    const values = await this.read(read, bytes * draws.length);
    return draws.map((_, k) => Array.from({ length: rows }, (_, i) => drawnAt(values, k * rows + i)));
  }

  /** Whether the last step recorded was a drawn step of these `rows` rows of `cache`, whose tokens' ids a step fed on the GPU can read (stepsDrawn with null tokens). */
  continues(cache: KVCache, rows: number): boolean {
    const last = this.drawnInPlace;
    return last !== null && last.cache === cache && last.rows === rows && last.encoded === this.encoded;
  }

  /**
   * One step of every row of `cache` fed `tokens` (one a row): where a row has a draw, its next
   * token drawn with it on the GPU; where it has none (null: its sampler needs the whole row,
   * for top-k, top-p or top logprobs), its logits [vocab]. Only those rows' logits come back,
   * beside 8 bytes a row, in one read; a drawn row's stay on the GPU until the next step
   * (stepLogits). The cache grows by one column.
   */
  async stepMixed(cache: KVCache, tokens: readonly number[], draws: readonly (RowDraw | null)[]): Promise<(DrawnToken | Float32Array)[]> {
    const rows = tokens.length;
    const V = this.config.vocabSize;
    const logitRows = draws.flatMap((draw, row) => (draw ? [] : [row]));
    const drawnBytes = logitRows.length < rows ? rows * 8 : 0;
    const bytes = drawnBytes + logitRows.length * V * 4;
    const read = this.readBuffer(bytes);
    const encoder = this.encode(cache, tokens.map((t) => [t]), true);
    const a = this.activations as Activations;
    if (logitRows.length < rows) {
      // A row without a draw is drawn greedily too, its token unused: one dispatch for the batch.
      this.encodeDraws(encoder, draws.map((draw) => draw ?? { temperature: 0, u: 0 }));
      encoder.copyBufferToBuffer(a.drawn, 0, read, 0, drawnBytes);
    }
    this.copyLogitRows(encoder, logitRows, read, drawnBytes);
    this.device.queue.submit([encoder.finish()]);
    cache.endStep(1);
    const values = await this.read(read, bytes);
    const first = drawnBytes / 4;
    const logitsOf = new Map(logitRows.map((row, i) => [row, values.slice(first + i * V, first + (i + 1) * V)]));
    return draws.map((_, row) => logitsOf.get(row) ?? drawnAt(values, row));
  }

  /** Steps encoded so far: what stepLogits checks that no step has overwritten the logits it reads since. */
  get stepsEncoded(): number {
    return this.encoded;
  }

  /**
   * Rows of the logits the last step made [vocab] each, read back now: a stepMixed row whose
   * drawn token its sampler refused, whose logits it then needs after all. Only while no step
   * has been encoded since the one that made them (`stepsEncoded` was `encoded` after it).
   */
  async stepLogits(rows: readonly number[], encoded: number): Promise<Float32Array[]> {
    if (encoded !== this.encoded) throw new Error('decode step: the logits asked for were overwritten by a later step');
    const V = this.config.vocabSize;
    const read = this.readBuffer(rows.length * V * 4);
    const encoder = this.device.createCommandEncoder();
    this.copyLogitRows(encoder, rows, read, 0);
    this.device.queue.submit([encoder.finish()]);
    const values = await this.read(read, rows.length * V * 4);
    return rows.map((_, i) => values.slice(i * V, (i + 1) * V));
  }

  /** Records copies of the step's logits of `rows` (ascending) into `read` from `offset` on, one row after another; rows next to each other in one copy. */
  private copyLogitRows(encoder: GPUCommandEncoder, rows: readonly number[], read: GPUBuffer, offset: number): void {
    const rowBytes = this.config.vocabSize * 4;
    const logits = (this.activations as Activations).logits;
    for (let i = 0; i < rows.length; ) {
      let end = i + 1;
      while (end < rows.length && rows[end] === rows[end - 1] + 1) end++;
      encoder.copyBufferToBuffer(logits, rows[i] * rowBytes, read, offset + i * rowBytes, (end - i) * rowBytes);
      i = end;
    }
  }

  /** Records the draw of each row's next token from the step's logits (SAMPLE_SHADER), one workgroup a row, with `draws` written for it. */
  private encodeDraws(encoder: GPUCommandEncoder, draws: readonly RowDraw[]): void {
    const a = this.activations as Activations;
    this.device.queue.writeBuffer(a.draws, 0, Float32Array.from(draws.flatMap((d) => [d.temperature, d.u])));
    this.device.queue.writeBuffer(this.sampleUniform, 0, new Uint32Array([draws.length, this.config.vocabSize, 0, 0]));
    const pass = encoder.beginComputePass();
    pass.setPipeline(this.pipeline('sample', '', () => SAMPLE_SHADER));
    pass.setBindGroup(0, this.sampleGroup as GPUBindGroup);
    pass.dispatchWorkgroups(draws.length);
    pass.end();
  }

  /**
   * Every row of `cache` fed its row of `tokens` (rows of equal length T; an empty cache takes
   * a prompt this way): the logits [rows * vocab] after each row's last token. The cache grows
   * by T columns.
   */
  async logits(cache: KVCache, tokens: readonly (readonly number[])[]): Promise<Float32Array> {
    const bytes = tokens.length * this.config.vocabSize * 4;
    const encoder = this.encode(cache, tokens, true);
    const read = this.readBuffer(bytes);
    encoder.copyBufferToBuffer((this.activations as Activations).logits, 0, read, 0, bytes);
    this.device.queue.submit([encoder.finish()]);
    cache.endStep(tokens[0].length);
    return this.read(read, bytes);
  }

  /** As logits, without the lm_head or anything read back: a prompt's chunks before its last. */
  advance(cache: KVCache, tokens: readonly (readonly number[])[]): void {
    this.device.queue.submit([this.encode(cache, tokens, false).finish()]);
    cache.endStep(tokens[0].length);
  }

  /**
   * Where a step's GPU time goes: every dispatch of a step of `tokens` timed with timestamp
   * queries (each in its own compute pass), summed by what it computes, in microseconds; null
   * where the adapter offers no timestamp queries. The cache is left as it was (the step's
   * columns are written but not counted, so the next step writes them again).
   */
  async profile(cache: KVCache, tokens: readonly (readonly number[])[]): Promise<Record<string, number> | null> {
    if (!this.device.features.has('timestamp-query')) return null;
    const labels: string[] = [];
    // Two timestamps a dispatch: the embeddings, at most DISPATCHES_PER_LAYER a layer (adapters included) and the lm_head.
    const querySet = this.device.createQuerySet({ type: 'timestamp', count: 2 * (DISPATCHES_PER_LAYER * this.layers.length + 2) });
    const bytes = querySet.count * 8;
    const resolved = this.device.createBuffer({ size: bytes, usage: 0x200 /* QUERY_RESOLVE */ | USAGE.copySrc });
    const readable = this.device.createBuffer({ size: bytes, usage: USAGE.mapRead | USAGE.copyDst });
    try {
      const encoder = this.encode(cache, tokens, true, { timing: { querySet, labels } });
      encoder.resolveQuerySet(querySet, 0, 2 * labels.length, resolved, 0);
      encoder.copyBufferToBuffer(resolved, 0, readable, 0, bytes);
      this.device.queue.submit([encoder.finish()]);
      await readable.mapAsync(1 /* GPUMapMode.READ */);
      const times = new BigUint64Array(readable.getMappedRange().slice(0));
      readable.unmap();
      const spent: Record<string, number> = {};
      labels.forEach((label, i) => (spent[label] = (spent[label] ?? 0) + Number(times[2 * i + 1] - times[2 * i]) / 1000));
      return spent;
    } finally {
      querySet.destroy();
      resolved.destroy();
      readable.destroy();
    }
  }

  /** Releases the step's buffers (the model's dispose does; a later `for` makes a new step). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.forget();
    if (stepsByModel.get(this.model) === this) stepsByModel.delete(this.model);
    for (const buffer of this.owned) buffer.destroy();
    for (const buffer of Object.values(this.activations ?? {})) buffer.destroy();
    this.activations = null;
    this.mask?.destroy();
    this.slidingMask?.destroy();
    for (const buffer of this.readBuffers) buffer.destroy();
    this.readBuffers = [];
    for (const uniform of this.layerUniforms.values()) uniform.destroy();
    this.layerUniforms.clear();
    this.layerBindings = [];
    for (const products of this.lora) for (const lora of Object.values(products)) this.dropLora(lora);
    this.lora = [];
  }

  /**
   * Writes the step's inputs and records its layers (and with `head` the final norm and lm_head
   * on each row's last token) into a new encoder: in one compute pass, or with `timing` each
   * dispatch in a pass of its own that writes its start and end into the query set, its label
   * pushed to `timing.labels`. `fed`: the tokens' ids are on the GPU already (`tokens` gives the
   * step's shape).
   */
  private encode(cache: KVCache, tokens: readonly (readonly number[])[], head: boolean, { fed = false, timing }: EncodeOptions = {}): GPUCommandEncoder {
    const rows = tokens.length;
    const T = tokens[0]?.length ?? 0;
    if (rows !== cache.rows || T === 0 || tokens.some((r) => r.length !== T)) throw new Error(`decode step: ${rows} rows of equal, non-zero length wanted for ${cache.rows} cache rows`);
    this.encoded++;
    const { numKvHeads: KV, headDim: D } = this.config;
    const N = rows * T;
    const targets = cache.reserve(T, { kvHeads: KV, headDim: D });
    const splits = this.columnSplitsOf(rows, T, cache.width);
    this.ensureCapacity(N, rows, cache.width + T);
    // Binding a tensor that tfjs still holds on the host, or making the adapters' factors, queues work in tfjs's encoder.
    this.layers.forEach((_, l) => this.bindLayer(l, targets[l].k, targets[l].v, cachePrograms(T, splits)));
    this.updateLora(N);
    // tfjs's queued work goes first.
    this.flushTfjs();
    this.writeInputs(cache, tokens, fed);
    const { dispatches } = this.prepared(rows, T, splits);
    // The lm_head is the last dispatch.
    const count = head ? dispatches.length : dispatches.length - 1;
    const encoder = this.device.createCommandEncoder();
    if (!timing) {
      const pass = encoder.beginComputePass();
      for (let i = 0; i < count; i++) {
        const d = dispatches[i];
        pass.setPipeline(d.pipeline);
        pass.setBindGroup(0, d.group);
        pass.dispatchWorkgroups(d.x, d.y, d.z);
      }
      pass.end();
      return encoder;
    }
    for (let i = 0; i < count; i++) {
      const d = dispatches[i];
      const index = timing.labels.push(d.label) - 1;
      const pass = encoder.beginComputePass({ timestampWrites: { querySet: timing.querySet, beginningOfPassWriteIndex: 2 * index, endOfPassWriteIndex: 2 * index + 1 } });
      pass.setPipeline(d.pipeline);
      pass.setBindGroup(0, d.group);
      pass.dispatchWorkgroups(d.x, d.y, d.z);
      pass.end();
    }
    return encoder;
  }

  /**
   * Writes what changes every step: the tokens' ids (nothing where `fed`, the ids the last step
   * drew being in place), their RoPE tables, the cache's mask, and the step's sizes.
   */
  private writeInputs(cache: KVCache, tokens: readonly (readonly number[])[], fed: boolean): void {
    const T = tokens[0].length;
    const a = this.activations as Activations;
    const { queue } = this.device;
    // Fed: the sample program of the step before wrote the ids (stepsDrawn).
    if (!fed) {
      const ids = tokens.flat();
      this.model.embedding.checkIds(ids);
      queue.writeBuffer(a.ids, 0, Uint32Array.from(ids));
    }
    const positions = cache.lengths().flatMap((p) => Array.from({ length: T }, (_, t) => p + t));
    queue.writeBuffer(a.tables, 0, this.ropeTables.tables(positions));
    queue.writeBuffer(this.mask as GPUBuffer, 0, cache.stepMask(T));
    const window = this.config.slidingWindow;
    if (window && this.slidingRopeTables && this.slidingMask) {
      queue.writeBuffer(a.slidingTables, 0, this.slidingRopeTables.tables(positions));
      queue.writeBuffer(this.slidingMask, 0, cache.stepMask(T, window.size));
    }
    queue.writeBuffer(this.stepUniform, 0, new Uint32Array([tokens.length * T, cache.width + T, cache.width, T]));
  }

  /**
   * The step of `rows` rows of T tokens, its attention in `columnSplits` splits of the columns,
   * as prepared for the current bind groups: its products' plans and its dispatches in order,
   * the lm_head's last. Made on first use of a shape and
   * kept until a bind group changes (`bindGroupsMade`), so that a step of a shape seen before
   * records its dispatches from a list, without planning the products or looking up pipelines.
   * A step of at least TILED_TOKENS tokens may take its products in tiles, as setStepProducts
   * and the tiles products take now say: its plans are made each time (a few objects) and their
   * tiles are part of its key.
   * The products' uniforms depend on the plans alone: written again only when the step differs
   * from the last one written.
   */
  private prepared(rows: number, T: number, columnSplits: number): PreparedStep {
    if (this.preparedAt !== this.bindGroupsMade) {
      this.preparedSteps.clear();
      this.preparedAt = this.bindGroupsMade;
      this.uniformsOf = null;
    }
    const tileable = rows * T >= TILED_TOKENS ? this.plans(rows, T) : null;
    const shape = `${rows}:${T}:${columnSplits}`;
    const key = tileable ? `${shape}:${PRODUCTS.map((kind) => tileable.products[kind].tiling?.tile ?? 'split').join(',')}` : shape;
    let step = this.preparedSteps.get(key);
    if (!step) {
      // A prompt's last chunk can be of any length: keep a bounded number of shapes.
      if (this.preparedSteps.size >= KEPT_PREPARED_STEPS) this.preparedSteps.clear();
      const plans = tileable ?? this.plans(rows, T);
      step = { plans, dispatches: this.dispatchList(rows, T, plans, columnSplits) };
      this.preparedSteps.set(key, step);
    }
    if (this.uniformsOf !== step) {
      this.writePlanUniforms(rows, T, step.plans);
      this.uniformsOf = step;
    }
    return step;
  }

  /** How each product of a step of `rows` rows of T tokens runs (splitsFor); the x A products' only where the product has adapters added after it (ADAPTER_MODE addDelta). */
  private plans(rows: number, T: number): StepPlans {
    const { hiddenSize: C, numHeads: H, numKvHeads: KV, headDim: D, intermediateSize: I, vocabSize: V } = this.config;
    const N = rows * T;
    const widths: Record<ProductKind, [number, number]> = { qkv: [C, (H + 2 * KV) * D], o: [H * D, C], gateUp: [C, 2 * I], down: [I, C] };
    const products = {} as Record<ProductKind, ProductPlan>;
    const xA: Partial<Record<ProductKind, ProductPlan>> = {};
    const tiled = takesTiles(rows, T);
    for (const kind of PRODUCTS) {
      const [K, n] = widths[kind];
      const rank = this.rankOf(kind);
      const makesXA = rank > 0 && ADAPTER_MODE[kind] === 'makeXA';
      products[kind] = tiled ? tiledPlan(N, K, n, makesXA ? tiledXAWorkgroups(N, rank) : 0) : splitsFor(N, K, n);
      // In tiles each element adds its (x A) B from x A's splits (tiledLinearShader's loraDelta): x A unsplit, read once an element.
      if (rank > 0 && !makesXA) xA[kind] = splitsFor(N, K, rank, tiled ? 1 : MAX_SPLITS);
    }
    // The head reads each row's last token, unsplit.
    return { products, xA, head: splitsFor(rows, C, V, 1) };
  }

  /** The uniforms of a step's products and of the programs that sum them. */
  private writePlanUniforms(rows: number, T: number, plans: StepPlans): void {
    const { hiddenSize: C, intermediateSize: I, vocabSize: V, rmsNormEps: eps } = this.config;
    const { queue } = this.device;
    const N = rows * T;
    for (const kind of PRODUCTS) {
      const p = plans.products[kind];
      const { k: K, n } = p;
      const rank = this.rankOf(kind);
      const a = plans.xA[kind];
      if (a) queue.writeBuffer(this.xADims[kind], 0, dimsData([N, K, rank / 4, rank / 4, a.chunk, K, 0, 0, 0, 0]));
      queue.writeBuffer(this.dims[kind], 0, dimsData([N, K, n / 4, n / 4, p.chunk, K, 0, rank, MAX_ADAPTERS, a?.splits ?? 0]));
    }
    // Row r's input to the head starts at (r T + T - 1) C.
    queue.writeBuffer(this.dims.lmHead, 0, dimsData([rows, C, V / 4, V / 4, plans.head.chunk, T * C, (T - 1) * C, 0]));
    queue.writeBuffer(this.dims.swiglu, 0, dimsData([N, I / 4]));
    queue.writeBuffer(this.dims.finishO, 0, dimsData([N, C / 4, this.rankOf('o'), MAX_ADAPTERS], [eps]));
    queue.writeBuffer(this.dims.finishDown, 0, dimsData([N, C / 4, this.rankOf('down'), MAX_ADAPTERS], [eps]));
  }

  /** The rank of every layer's `kind` product's adapters together, 0 without (the same in every layer: applies). */
  private rankOf(kind: ProductKind): number {
    return this.lora.find((l) => l[kind])?.[kind]?.rank ?? 0;
  }

  /** A step's dispatches in order over the current bind groups, each with its pipeline and grid; the lm_head's last. */
  private dispatchList(rows: number, T: number, plans: StepPlans, columnSplits: number): Dispatch[] {
    const { numHeads: H, numKvHeads: KV, headDim: D, intermediateSize: I, hiddenAct } = this.config;
    const N = rows * T;
    const list: Dispatch[] = [];
    const run = (label: string, pipeline: GPUComputePipeline, group: GPUBindGroup, x: number, y = 1, z = 1) => list.push({ label, pipeline, group, x, y, z });
    const { source } = this.embeddings;
    const scale = this.model.embeddingScale;
    run('embed', this.pipeline('embed', `${embeddingSourceKey(source)}:${scale}`, () => embedShader(source, scale)), this.embedGroup as GPUBindGroup, N);
    const linear = (label: string, group: GPUBindGroup, p: ProductPlan, norm: boolean, weights: StorageDtype, adapters: LinearAdapters = 'none', xATiles = 0) => {
      // ADAPTER_MODE gives addDelta to the products with a norm, makeXA to those without.
      const kind: ProgramKind = adapters === 'addDelta' ? 'linearNormAddDelta' : adapters === 'makeXA' ? 'linearMakeXA' : norm ? 'linearNorm' : 'linear';
      const { tiling } = p;
      if (tiling) return run(label, this.pipeline(kind, `tiled:${tileKey(tiling.tile)}:${p.k}:${p.n}:${p.chunk}:${weights}`, () => tiledLinearShader(p.k, p.n, tiling.tile, p.chunk, norm, weights, adapters)), group, ...tiling.dispatch);
      run(label, this.pipeline(kind, `${p.tile}:${weights}`, () => linearShader(p.tile, norm, adapters, weights)), group, p.rowTiles, p.columnTiles + xATiles, p.splits);
    };
    // A layer's product, with its adapters where it has them (ADAPTER_MODE); the adapters' x A is f32.
    const layerProduct = (l: number, kind: ProductKind, label: string) => {
      const p = plans.products[kind];
      const lora = this.lora[l][kind];
      const weights = this.layers[l][kind].dtype;
      if (!lora?.groups) return linear(label, this.layerGroups[l][kind], p, NORMED[kind], weights);
      if (ADAPTER_MODE[kind] === 'makeXA') return linear(label, lora.groups.product, p, NORMED[kind], weights, 'makeXA', Math.ceil(lora.rank / 4 / WORKGROUP));
      linear(`${label}_lora_a`, lora.groups.xA as GPUBindGroup, plans.xA[kind] as ProductPlan, NORMED[kind], 'F32');
      linear(label, lora.groups.product, p, NORMED[kind], weights, 'addDelta');
    };
    // The sum of o's or down's splits into the residual stream, with the product's adapters' delta where it has them.
    const finishResidual = (l: number, kind: 'o' | 'down') => {
      const { splits } = plans.products[kind];
      const finish = this.lora[l][kind]?.groups?.finish;
      const group = finish ?? this.layerGroups[l][kind === 'o' ? 'finishO' : 'finishDown'];
      const norm = this.layers[l].sandwich !== null;
      const program: ProgramKind = `finishResidual${finish ? 'Lora' : ''}${norm ? 'Norm' : ''}`;
      run('residual', this.pipeline(program, splits, () => finishResidualShader(splits, !!finish, norm)), group, N);
    };
    const qkvSplits = plans.products.qkv.splits;
    const gateUpSplits = plans.products.gateUp.splits;
    const pairs = N * (H + 2 * KV) * (D / 2);
    // q_norm and k_norm (Qwen3, Gemma 3), done by the programs that do RoPE's work.
    const qkNormEps = this.config.qkNorm ? this.config.rmsNormEps : null;
    const { memory, tiles } = this.promptTiles();
    this.layerBindings.forEach((bound, l) => {
      const binding = (bound as LayerBinding).groups as Record<CacheProgram, GPUBindGroup>;
      layerProduct(l, 'qkv', 'qkv');
      if (T === 1 && columnSplits > 1) {
        const kind = qkNormEps !== null ? 'ropeAttentionNorm' : 'ropeAttention';
        run('rope_attention', this.pipeline(kind, `columns:${D}:${qkvSplits}:${qkNormEps}`, () => ropeAttentionColumnsShader(D, qkvSplits, qkNormEps)), binding.ropeAttentionColumns, H, N, columnSplits);
        run('attention_combine', this.pipeline('combineColumns', `${D}:${columnSplits}`, () => combineColumnsShader(D, columnSplits)), this.combineGroup as GPUBindGroup, H, N);
      } else if (T === 1 && qkNormEps !== null) {
        run('rope_attention', this.pipeline('ropeAttentionNorm', `${D}:${qkvSplits}:${qkNormEps}`, () => ropeAttentionShader(D, qkvSplits, qkNormEps)), binding.ropeAttention, H, N);
      } else if (T === 1) {
        run('rope_attention', this.pipeline('ropeAttention', `${D}:${qkvSplits}`, () => ropeAttentionShader(D, qkvSplits)), binding.ropeAttention, H, N);
      } else {
        if (qkNormEps !== null) run('rope', this.pipeline('ropeNorm', `${qkvSplits}:${qkNormEps}`, () => ropeNormStoreShader(qkvSplits, qkNormEps)), binding.rope, H + 2 * KV, N);
        else run('rope', this.pipeline('rope', qkvSplits, () => ropeStoreShader(qkvSplits)), binding.rope, ...flatGrid(pairs));
        if (tiles && columnSplits > 1) {
          run('attention', this.pipeline('attention', `tiled-columns:${D}:${tiles.TK}`, () => promptAttentionShader(D, memory, true)), binding.attentionColumns, H, rows * Math.ceil(T / tiles.TQ), columnSplits);
          run('attention_combine', this.pipeline('combineColumns', `${D}:${columnSplits}`, () => combineColumnsShader(D, columnSplits)), this.combineGroup as GPUBindGroup, H, N);
        } else if (tiles) {
          run('attention', this.pipeline('attention', `tiled:${D}:${tiles.TK}`, () => promptAttentionShader(D, memory)), binding.attention, H, rows * Math.ceil(T / tiles.TQ));
        } else {
          run('attention', this.pipeline('attention', D, () => attentionShader(D)), binding.attention, H, N);
        }
      }
      layerProduct(l, 'o', 'o');
      finishResidual(l, 'o');
      layerProduct(l, 'gateUp', 'gate_up');
      run('swiglu', this.pipeline('finishSwiglu', `${gateUpSplits}:${hiddenAct}`, () => finishSwigluShader(gateUpSplits, hiddenAct)), this.layerGroups[l].swiglu, ...flatGrid((N * I) / 4));
      layerProduct(l, 'down', 'down');
      finishResidual(l, 'down');
    });
    linear('lm_head', this.headGroup as GPUBindGroup, plans.head, true, this.lmHead.dtype);
    return list;
  }

  /**
   * The column splits of a step of `rows` rows of T tokens over a cache `width` columns wide
   * (columnSplits): a decoding step's of the cached columns, a prompt's chunk's of the columns
   * its tiles see (none where its head dimension takes no tiles).
   */
  private columnSplitsOf(rows: number, T: number, width: number): number {
    const H = this.config.numHeads;
    if (T === 1) return columnSplits(rows * H, width);
    const { tiles } = this.promptTiles();
    return tiles ? columnSplits(H * rows * Math.ceil(T / tiles.TQ), width + T) : 1;
  }

  /** A prompt chunk's attention tiles in the device's workgroup memory (workgroupMemoryLimit), and that memory; null tiles where the head dimension takes none. */
  private promptTiles(): { memory: number; tiles: ForwardTiles | null } {
    const memory = workgroupMemoryLimit(this.backend);
    return { memory, tiles: forwardTiles(this.config.headDim, memory) };
  }

  /**
   * Activation buffers for `tokens` tokens of `rows` rows and a mask of `columns` columns,
   * grown (and the bind groups that name them made again) when too small.
   */
  private ensureCapacity(tokens: number, rows: number, columns: number): void {
    if (tokens > this.tokenCapacity || rows > this.rowCapacity) {
      for (const buffer of Object.values(this.activations ?? {})) buffer.destroy();
      this.tokenCapacity = Math.max(tokens, this.tokenCapacity);
      this.rowCapacity = Math.max(rows, this.rowCapacity);
      const { hiddenSize: C, numHeads: H, numKvHeads: KV, headDim: D, intermediateSize: I, vocabSize: V } = this.config;
      const N = this.tokenCapacity;
      const B = this.rowCapacity;
      const storage = (floats: number) => this.create(floats * 4, USAGE.storage | USAGE.copyDst | USAGE.copySrc);
      // An unsplit product of every width fits in the partial sums' buffer, whatever splitsFor allows beyond it.
      const widest = Math.max((H + 2 * KV) * D, 2 * I, C);
      this.activations = {
        ids: storage(N),
        x: storage(N * C),
        h: storage(N * C),
        rinv: storage(N),
        partial: this.create(Math.max(PARTIAL_BYTES, N * widest * 4), USAGE.storage),
        loraIn: storage(MAX_SPLITS * N * MAX_LORA_RANK),
        rowAdapters: storage(N * MAX_ADAPTERS),
        q: storage(N * H * D),
        heads: storage(N * H * D),
        // Every split's part of each (token, head) of a grid within TARGET_WORKGROUPS (columnSplits): a workgroup a (row, head) decoding, a tile of TQ tokens' a prompt's chunk.
        columnParts: storage(TARGET_WORKGROUPS * (this.promptTiles().tiles?.TQ ?? 1) * COLUMN_PART),
        act: storage(N * I),
        tables: storage(N * 2 * D),
        slidingTables: storage(this.slidingRopeTables ? N * 2 * D : 4),
        logits: storage(B * V),
        draws: storage(B * 2),
        drawn: storage(B * 2),
      };
      this.maskCapacity = 0;
      this.makeGroups();
    }
    if (tokens * columns > this.maskCapacity) {
      this.mask?.destroy();
      this.slidingMask?.destroy();
      this.maskCapacity = this.tokenCapacity * Math.max(columns, 256) * 2;
      this.mask = this.create(this.maskCapacity * 4, USAGE.storage | USAGE.copyDst);
      this.slidingMask = this.slidingRopeTables ? this.create(this.maskCapacity * 4, USAGE.storage | USAGE.copyDst) : null;
      this.layerBindings = this.layerBindings.map(() => null);
    }
  }

  /** Bind groups of every layer's products and their sums, the lm_head's and the sampler's, over the current activation buffers. */
  private makeGroups(): void {
    const a = this.activations as Activations;
    this.layerGroups = this.layers.map((w) => ({
      qkv: this.group('linearNorm', [this.dims.qkv, a.x, w.qkv.weight, a.partial, w.inputNorm, a.rinv]),
      o: this.group('linear', [this.dims.o, a.heads, w.o.weight, a.partial]),
      finishO: this.group(w.sandwich ? 'finishResidualNorm' : 'finishResidual', [this.dims.finishO, a.partial, a.x, a.h, a.rinv, ...(w.sandwich ? [w.sandwich.afterAttention] : [])]),
      gateUp: this.group('linearNorm', [this.dims.gateUp, a.h, w.gateUp.weight, a.partial, w.postNorm, a.rinv]),
      swiglu: this.group('finishSwiglu', [this.dims.swiglu, a.partial, a.act]),
      down: this.group('linear', [this.dims.down, a.act, w.down.weight, a.partial]),
      finishDown: this.group(w.sandwich ? 'finishResidualNorm' : 'finishResidual', [this.dims.finishDown, a.partial, a.h, a.x, a.rinv, ...(w.sandwich ? [w.sandwich.afterMlp] : [])]),
    }));
    this.headGroup = this.group('linearNorm', [this.dims.lmHead, a.x, this.lmHead.weight, a.logits, this.finalNorm, a.rinv]);
    this.embedGroup = this.group('embed', [this.dims.finishO, a.ids, this.embeddings.weight, a.x, a.rinv]);
    for (const products of this.lora) for (const lora of Object.values(products)) if (lora) lora.groups = null;
    this.sampleGroup = this.group('sample', [this.sampleUniform, a.logits, a.draws, a.drawn, a.ids]);
    this.combineGroup = this.group('combineColumns', [this.stepUniform, a.columnParts, a.heads]);
  }

  /**
   * Each product's adapters as the step runs them (ProductLora) for a step of `tokens` tokens:
   * made again where the model's adapters changed since the last step, their bind groups made
   * over the current buffers, and which rows each adapter applies to (rowAdapters) written.
   */
  private updateLora(tokens: number): void {
    // Nothing to make or drop: no adapters now, and none kept from an earlier step.
    if (!this.anyAdapters() && this.lora.every((products) => PRODUCTS.every((kind) => products[kind] === null))) return;
    const a = this.activations as Activations;
    // The step's adapters, each a column of rowAdapters: by the rows it applies to ("*": every row).
    const slots = new Map<string, number>();
    const slotOf = (part: LoraPart) => {
      const key = adapterKey(part);
      if (!slots.has(key)) slots.set(key, slots.size);
      return slots.get(key) as number;
    };
    const rowAdapters = new Float32Array(tokens * MAX_ADAPTERS);
    this.model.blocks.forEach((block, l) => {
      for (const kind of PRODUCTS) {
        const linear = productOf(block, kind);
        const parts = linear.adapterParts(tokens) ?? [];
        let lora = this.lora[l][kind];
        if (lora && (lora.from.length !== parts.length || lora.from.some((t, i) => t !== parts[i].aT))) {
          this.dropLora(lora);
          lora = this.lora[l][kind] = null;
        }
        if (parts.length === 0) continue;
        if (!lora) {
          const [A, B] = tf.tidy(() => [
            tf.concat(parts.map((p) => p.aT), 1) as tf.Tensor2D,
            tf.concat(
              parts.map((p) => tf.pad(p.scale ? tf.mul(p.bT, p.scale) : p.bT, [[0, 0], [p.col, linear.outFeatures - p.col - p.width]])),
              0,
            ) as tf.Tensor2D,
          ]);
          const rank = A.shape[1];
          lora = this.lora[l][kind] = { from: parts.map((p) => p.aT), a: A, b: B, rank, rankAdapter: new Uint32Array(0), rankAdapterBuffer: this.create(MAX_LORA_RANK * 4, USAGE.uniform | USAGE.copyDst), groups: null };
        }
        const rankAdapter = Uint32Array.from(parts.flatMap((p) => new Array<number>(p.aT.shape[1]).fill(slotOf(p))));
        for (const part of parts) {
          const slot = slotOf(part);
          for (const row of part.rows ?? Array.from({ length: tokens }, (_, i) => i)) rowAdapters[row * MAX_ADAPTERS + slot] = 1;
        }
        if (rankAdapter.some((v, i) => v !== lora?.rankAdapter[i]) || rankAdapter.length !== lora.rankAdapter.length) {
          this.device.queue.writeBuffer(lora.rankAdapterBuffer, 0, rankAdapter);
          lora.rankAdapter = rankAdapter;
        }
        if (!lora.groups) lora.groups = this.loraGroups(l, kind, lora);
      }
    });
    if (slots.size > 0) this.device.queue.writeBuffer(a.rowAdapters, 0, rowAdapters);
  }

  /** Whether any of the blocks' products has an adapter now. */
  private anyAdapters(): boolean {
    return this.model.blocks.some((block) => PRODUCTS.some((kind) => productOf(block, kind).hasAdapters));
  }

  /** The bind groups of layer `l`'s `kind` product with its adapters, over the current buffers (ProductLora.groups). */
  private loraGroups(l: number, kind: ProductKind, lora: ProductLora): NonNullable<ProductLora['groups']> {
    const a = this.activations as Activations;
    const weights = this.layers[l];
    const delta = [a.loraIn, this.buffer(lora.b), lora.rankAdapterBuffer, a.rowAdapters];
    switch (kind) {
      case 'qkv':
      case 'gateUp': {
        const [input, gamma] = kind === 'qkv' ? [a.x, weights.inputNorm] : [a.h, weights.postNorm];
        return {
          xA: this.group('linearNorm', [this.xADims[kind], input, this.buffer(lora.a), a.loraIn, gamma, a.rinv]),
          product: this.group('linearNormAddDelta', [this.dims[kind], input, weights[kind].weight, a.partial, gamma, a.rinv, ...delta]),
        };
      }
      case 'o':
        return {
          product: this.group('linearMakeXA', [this.dims.o, a.heads, weights.o.weight, a.partial, this.buffer(lora.a), a.loraIn]),
          finish: this.group(weights.sandwich ? 'finishResidualLoraNorm' : 'finishResidualLora', [this.dims.finishO, a.partial, a.x, a.h, a.rinv, ...delta, ...(weights.sandwich ? [weights.sandwich.afterAttention] : [])]),
        };
      case 'down':
        return {
          product: this.group('linearMakeXA', [this.dims.down, a.act, weights.down.weight, a.partial, this.buffer(lora.a), a.loraIn]),
          finish: this.group(weights.sandwich ? 'finishResidualLoraNorm' : 'finishResidualLora', [this.dims.finishDown, a.partial, a.h, a.x, a.rinv, ...delta, ...(weights.sandwich ? [weights.sandwich.afterMlp] : [])]),
        };
    }
  }

  private dropLora(lora: ProductLora | null): void {
    if (lora) this.bindGroupsMade++;
    lora?.a.dispose();
    lora?.b.dispose();
    lora?.rankAdapterBuffer.destroy();
  }

  /**
   * A layer's bind groups for `programs` over the cache tensors `keys` and `values`: those made
   * before where the tensors are the same, else all made again (the uniform with the cache's
   * capacity too), each only when a step first runs its program.
   */
  private bindLayer(layer: number, keys: tf.Tensor4D, values: tf.Tensor4D, programs: CacheProgram[]): LayerBinding {
    let binding = this.layerBindings[layer];
    if (!binding || binding.keys !== keys || binding.values !== values) {
      binding = { keys, values, uniform: this.layerUniform(keys.shape[2]), groups: {} };
      this.layerBindings[layer] = binding;
    }
    const missing = programs.filter((program) => !binding.groups[program]);
    if (missing.length === 0) return binding;
    const a = this.activations as Activations;
    const k = this.buffer(keys);
    const v = this.buffer(values);
    const { qkvBias, headNorms, windowed } = this.layers[layer];
    const norms = headNorms ? [headNorms] : [];
    // A sliding-window layer attends with its own RoPE tables and mask.
    const tables = windowed ? a.slidingTables : a.tables;
    const mask = (windowed ? this.slidingMask : this.mask) as GPUBuffer;
    const { uniform } = binding;
    const make: Record<CacheProgram, () => GPUBindGroup> = {
      rope: () => this.group(headNorms ? 'ropeNorm' : 'rope', [this.stepUniform, uniform, a.partial, tables, a.q, k, v, qkvBias, ...norms]),
      attention: () => this.group('attention', [this.stepUniform, uniform, a.q, k, v, mask, a.heads]),
      attentionColumns: () => this.group('attention', [this.stepUniform, uniform, a.q, k, v, mask, a.columnParts]),
      ropeAttention: () => this.group(headNorms ? 'ropeAttentionNorm' : 'ropeAttention', [this.stepUniform, uniform, a.partial, k, v, mask, a.heads, tables, qkvBias, ...norms]),
      ropeAttentionColumns: () => this.group(headNorms ? 'ropeAttentionNorm' : 'ropeAttention', [this.stepUniform, uniform, a.partial, k, v, mask, a.columnParts, tables, qkvBias, ...norms]),
    };
    for (const program of missing) binding.groups[program] = make[program]();
    return binding;
  }

  /**
   * The layers' uniform for a cache of `capacity` columns (layerUniforms), made on first use;
   * past KEPT_LAYER_UNIFORMS the least recently used that no layer binds is destroyed.
   */
  private layerUniform(capacity: number): GPUBuffer {
    let uniform = this.layerUniforms.get(capacity);
    if (uniform) {
      this.layerUniforms.delete(capacity);
    } else {
      const { numHeads: H, numKvHeads: KV, headDim: D } = this.config;
      uniform = this.create(16, USAGE.uniform | USAGE.copyDst);
      this.device.queue.writeBuffer(uniform, 0, new Uint32Array([H, KV, D, capacity]));
      if (this.layerUniforms.size >= KEPT_LAYER_UNIFORMS) {
        const bound = new Set(this.layerBindings.map((binding) => binding?.uniform));
        const unused = [...this.layerUniforms].find(([, buffer]) => !bound.has(buffer));
        if (unused) {
          this.layerUniforms.delete(unused[0]);
          unused[1].destroy();
        }
      }
    }
    // Most recently used last: a Map iterates in insertion order.
    this.layerUniforms.set(capacity, uniform);
    return uniform;
  }

  /** Submits the work tfjs has queued in its own encoder (uploads, the cache's growth, a merge). */
  private flushTfjs(): void {
    if (!this.backend.commandEncoder) return;
    this.backend.endComputePassEncoder();
    this.backend.submitQueue();
  }

  private group(kind: ProgramKind, buffers: GPUBuffer[]): GPUBindGroup {
    this.bindGroupsMade++;
    return this.device.createBindGroup({ layout: this.pipelines.layouts[kind], entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) });
  }

  /** The pipeline of a program of `kind` and `variant` (a row tile, a split count), compiled from `code()` once per device. */
  private pipeline(kind: ProgramKind, variant: number | string, code: () => string): GPUComputePipeline {
    const key = `${kind}:${variant}`;
    let pipeline = this.pipelines.compiled.get(key);
    if (!pipeline) {
      pipeline = this.device.createComputePipeline({
        // Named in Dawn's messages about it, and in the grid census (tools/bench/gpu/grids.bench.ts).
        label: kind,
        layout: this.device.createPipelineLayout({ bindGroupLayouts: [this.pipelines.layouts[kind]] }),
        compute: { module: this.device.createShaderModule({ code: code() }), entryPoint: 'main' },
      });
      this.pipelines.compiled.set(key, pipeline);
    }
    return pipeline;
  }

  /** The GPUBuffer that holds a tfjs tensor's data on the webgpu backend (uploaded first if it is still on the host). */
  private buffer(tensor: tf.Tensor): GPUBuffer {
    this.backend.uploadToGPU(tensor.dataId);
    const resource = this.backend.tensorMap.get(tensor.dataId).resource;
    if (!resource || !('mapAsync' in (resource as object))) throw new Error('decode step: a tensor is not held in a GPUBuffer');
    return resource as GPUBuffer;
  }

  private create(size: number, usage: number): GPUBuffer {
    return this.device.createBuffer({ size: Math.max(16, Math.ceil(size / 16) * 16), usage });
  }

  /** A readback buffer of at least `bytes` for one read, a kept one where one is large enough. */
  private readBuffer(bytes: number): GPUBuffer {
    const kept = this.readBuffers.findIndex((b) => b.size >= bytes);
    if (kept >= 0) return this.readBuffers.splice(kept, 1)[0];
    return this.create(bytes, USAGE.mapRead | USAGE.copyDst);
  }

  /** The first `bytes` of a readback buffer once the GPU has written them; the buffer is then kept for a later read (the largest KEPT_READ_BUFFERS are). */
  private async read(buffer: GPUBuffer, bytes: number): Promise<Float32Array> {
    let values: Float32Array;
    try {
      values = await readChecked(this.device, async () => {
        await buffer.mapAsync(1 /* GPUMapMode.READ */, 0, bytes);
        const read = new Float32Array(buffer.getMappedRange(0, bytes).slice(0));
        buffer.unmap();
        return read;
      });
    } catch (err) {
      buffer.destroy();
      throw err;
    }
    if (this.disposed) buffer.destroy();
    else {
      // Smallest first, so that a read takes the smallest that holds it; the smallest go past KEPT_READ_BUFFERS.
      this.readBuffers.push(buffer);
      this.readBuffers.sort((x, y) => x.size - y.size);
      for (const extra of this.readBuffers.splice(0, this.readBuffers.length - KEPT_READ_BUFFERS)) extra.destroy();
    }
    return values;
  }
}

/** The block's projection that a product kind runs. */
function productOf(block: LlamaModel['blocks'][number], kind: ProductKind): FrozenLinear {
  switch (kind) {
    case 'qkv':
      return block.attention.qkv;
    case 'o':
      return block.attention.o;
    case 'gateUp':
      return block.mlp.gateUp;
    case 'down':
      return block.mlp.down;
  }
}

/** Which adapter a low-rank part is: the rows it applies to ("*": every row), the same for each of its parts in a step. */
function adapterKey(part: LoraPart): string {
  return part.rows ? part.rows.join(',') : '*';
}

/** A uniform's bytes: 32-bit unsigned fields, then 32-bit floats, padded to UNIFORM_BYTES. */
function dimsData(fields: number[], floats: number[] = []): ArrayBuffer {
  const data = new ArrayBuffer(UNIFORM_BYTES);
  new Uint32Array(data, 0, fields.length).set(fields);
  new Float32Array(data, 4 * fields.length, floats.length).set(floats);
  return data;
}

function pipelinesFor(device: GPUDevice): Pipelines {
  let pipelines = pipelinesByDevice.get(device);
  if (!pipelines) {
    const compute = 4; // GPUShaderStage.COMPUTE
    const layout = (bindings: Binding[]) =>
      device.createBindGroupLayout({
        entries: bindings.map((kind, binding) => ({ binding, visibility: compute, buffer: { type: kind === 'uniform' ? 'uniform' : kind === 'read' ? 'read-only-storage' : 'storage' } })),
      });
    const layouts = Object.fromEntries(Object.entries(LAYOUTS).map(([kind, bindings]) => [kind, layout(bindings)])) as Record<ProgramKind, GPUBindGroupLayout>;
    pipelines = { layouts, compiled: new Map() };
    pipelinesByDevice.set(device, pipelines);
  }
  return pipelines;
}
