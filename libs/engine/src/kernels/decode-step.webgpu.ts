/// <reference types="@webgpu/types" />
import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config';
import type { KVCache } from '../model/kv-cache';
import type { LlamaModel } from '../model/llama';
import type { FrozenLinear } from '../model/linear';
import { inverseFrequencies } from '../model/rope';
import { ATTENTION_SHADER, linearBindings, linearShader, LinearVariant, MAX_HEAD_DIM, ROPE_STORE_SHADER, SAMPLE_SHADER, WORKGROUP } from './decode-step.wgsl';
import type { DrawnToken, RowDraw } from './sample';
import { fusedKernelsApply } from './webgpu-program';

/**
 * A whole decoding step of a Llama-family model on webgpu, encoded by the engine rather than op
 * by op through tfjs: per layer six dispatches (the q|k|v product with the input RMSNorm folded
 * in; RoPE with the KV cache's new column written in place; attention over the cache; the
 * output product with the residual sum; the gate|up product with the post-attention RMSNorm
 * and SwiGLU; the down product with the residual sum), then the final norm with the lm_head
 * product and, for stepDrawn, the next token drawn on the GPU. Everything goes in one command
 * buffer and one queue submit, and only each row's token and logprob come back (8 bytes).
 *
 * The model's weights and the KV cache stay the tfjs tensors they are (their GPUBuffers are
 * bound directly); the pipelines are compiled once per device, the weights' bind groups made
 * once, and a layer's cache bind groups again only when the cache replaces its tensors
 * (KVCache.reserve). tfjs's own queued work is submitted first, so a step sees what tfjs wrote.
 *
 * It applies to float32 weights without adapters (LoRA checkpoints take the tfjs path), output
 * widths that are multiples of 4 and head dimensions up to MAX_HEAD_DIM; `for` says null
 * elsewhere. The same logits as the tfjs path to float rounding (summed in another order).
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

/** Buffers of one projection. */
interface LinearWeights {
  weight: GPUBuffer;
  bias: GPUBuffer | null;
  /** In features (K) and out features (N) of the weight. */
  k: number;
  n: number;
}

interface LayerWeights {
  inputNorm: GPUBuffer;
  postNorm: GPUBuffer;
  qkv: LinearWeights;
  o: LinearWeights;
  gateUp: LinearWeights;
  down: LinearWeights;
}

/** Per layer, the cache tensors its bind groups were made for. */
interface LayerBinding {
  keys: tf.Tensor4D;
  values: tf.Tensor4D;
  uniform: GPUBuffer;
  rope: GPUBindGroup;
  attention: GPUBindGroup;
}

/** Pipelines of one device, compiled once. */
interface Pipelines {
  linear: Map<string, { layout: GPUBindGroupLayout; byRows: Map<number, GPUComputePipeline> }>;
  rope: GPUComputePipeline;
  attention: GPUComputePipeline;
  sample: GPUComputePipeline;
}

const pipelinesByDevice = new WeakMap<GPUDevice, Pipelines>();

/** Rows a linear workgroup computes for a batch of `rows`: enough to cover small batches in one tile, at most 16. */
function rowsPerTile(rows: number): number {
  let r = 1;
  while (r < rows && r < 16) r *= 2;
  return r;
}

/** GPUBufferUsage's flags (fixed by the WebGPU specification; the globals exist only once Dawn is installed). */
const USAGE = { mapRead: 0x01, copySrc: 0x04, copyDst: 0x08, uniform: 0x40, storage: 0x80 } as const;

/** A linear product of the step: its variant (which pipeline), its bind group and its workgroups across the output's columns. */
interface LinearDispatch {
  variant: Omit<LinearVariant, 'rows'>;
  group: GPUBindGroup;
  x: number;
}

type Activations = Record<'x' | 'h' | 'qkv' | 'q' | 'heads' | 'act' | 'logits' | 'tables' | 'draws' | 'drawn' | 'readDrawn', GPUBuffer>;

export class WebGpuDecodeStep {
  private readonly backend: WebGpuBackendInternals;
  private readonly device: GPUDevice;
  private readonly pipelines: Pipelines;
  private readonly layers: LayerWeights[];
  private readonly finalNorm: GPUBuffer;
  private readonly lmHead: LinearWeights;
  private readonly invFreq: Float32Array;
  /** Uniform buffers this step owns, destroyed with it. */
  private readonly uniforms: GPUBuffer[] = [];
  private readonly stepUniform: GPUBuffer;
  private readonly sampleUniform: GPUBuffer;
  /** One uniform of linear dims per projection kind, written per step (rows change). */
  private readonly dims: Record<'qkv' | 'o' | 'gateUp' | 'down' | 'lmHead', GPUBuffer>;
  /** Tokens (rows times tokens a row) and rows the activation buffers hold. */
  private tokenCapacity = 0;
  private rowCapacity = 0;
  /** Floats the mask buffer holds. */
  private maskCapacity = 0;
  private activations: Activations | null = null;
  private mask: GPUBuffer | null = null;
  private readLogits: GPUBuffer | null = null;
  private layerBindings: (LayerBinding | null)[] = [];
  private linearGroups: LinearDispatch[][] = [];
  private headGroup: LinearDispatch | null = null;
  private sampleGroup: GPUBindGroup | null = null;

  /** The step for `model` on the webgpu backend now, or null where it does not apply (see the class comment). */
  static for(model: LlamaModel): WebGpuDecodeStep | null {
    if (!fusedKernelsApply() || !WebGpuDecodeStep.fits(model)) return null;
    return new WebGpuDecodeStep(model);
  }

  /** Whether the model's weights and shape are ones this step runs. */
  static fits(model: LlamaModel): boolean {
    const { headDim, numHeads, numKvHeads, hiddenSize } = model.config;
    if (headDim % 2 !== 0 || headDim > MAX_HEAD_DIM || numHeads % numKvHeads !== 0 || hiddenSize % 4 !== 0) return false;
    const linears = [...model.linears().map((l) => l.linear), model.lmHead];
    return linears.every((l) => !l.released && l.weightT.dtype === 'float32' && l.outFeatures % 4 === 0 && (l.bias?.dtype ?? 'float32') === 'float32');
  }

  /** Whether a step can run now: still webgpu with the kernels on, and no adapter attached since. */
  applies(): boolean {
    return fusedKernelsApply() && this.model.linears().every((l) => !l.linear.hasAdapters) && !this.model.lmHead.hasAdapters;
  }

  private constructor(private readonly model: LlamaModel) {
    this.backend = tf.backend() as unknown as WebGpuBackendInternals;
    this.device = this.backend.device;
    this.pipelines = pipelinesFor(this.device);
    const projection = (linear: FrozenLinear): LinearWeights => ({
      weight: this.buffer(linear.weightT),
      bias: linear.bias ? this.buffer(linear.bias) : null,
      k: linear.inFeatures,
      n: linear.outFeatures,
    });
    this.layers = model.blocks.map((block) => ({
      inputNorm: this.buffer(block.inputNorm.weight),
      postNorm: this.buffer(block.postAttentionNorm.weight),
      qkv: projection(block.attention.qkv),
      o: projection(block.attention.o),
      gateUp: projection(block.mlp.gateUp),
      down: projection(block.mlp.down),
    }));
    this.finalNorm = this.buffer(model.finalNorm.weight);
    this.lmHead = projection(model.lmHead);
    this.invFreq = inverseFrequencies(model.config);
    const uniform = () => {
      const buffer = this.device.createBuffer({ size: 32, usage: USAGE.uniform | USAGE.copyDst });
      this.uniforms.push(buffer);
      return buffer;
    };
    this.stepUniform = uniform();
    this.sampleUniform = uniform();
    const dims = uniform;
    this.dims = { qkv: dims(), o: dims(), gateUp: dims(), down: dims(), lmHead: dims() };
    this.layerBindings = model.blocks.map(() => null);
  }

  get config(): ModelConfig {
    return this.model.config;
  }

  /**
   * One step of every row of `cache` fed `tokens` (one a row): each row's next token drawn
   * with its draw. The cache grows by one column.
   */
  async stepDrawn(cache: KVCache, tokens: readonly number[], draws: readonly RowDraw[]): Promise<DrawnToken[]> {
    const rows = tokens.length;
    const encoder = this.encode(cache, tokens.map((t) => [t]), true);
    const a = this.activations as Activations;
    this.device.queue.writeBuffer(a.draws, 0, Float32Array.from(draws.flatMap((d) => [d.temperature, d.u])));
    this.device.queue.writeBuffer(this.sampleUniform, 0, new Uint32Array([rows, this.config.vocabSize, 0, 0]));
    const pass = encoder.beginComputePass();
    pass.setPipeline(this.pipelines.sample);
    pass.setBindGroup(0, this.sampleGroup as GPUBindGroup);
    pass.dispatchWorkgroups(rows);
    pass.end();
    encoder.copyBufferToBuffer(a.drawn, 0, a.readDrawn, 0, rows * 8);
    this.device.queue.submit([encoder.finish()]);
    cache.endStep(1);
    const values = await this.read(a.readDrawn, rows * 8);
    return Array.from({ length: rows }, (_, i) => ({ id: values[2 * i], logprob: values[2 * i + 1] }));
  }

  /**
   * Every row of `cache` fed its row of `tokens` (rows of equal length T; an empty cache takes
   * a prompt this way): the logits [rows * vocab] after each row's last token. The cache grows
   * by T columns.
   */
  async logits(cache: KVCache, tokens: readonly (readonly number[])[]): Promise<Float32Array> {
    const bytes = tokens.length * this.config.vocabSize * 4;
    const encoder = this.encode(cache, tokens, true);
    if (!this.readLogits || this.readLogits.size < bytes) {
      this.readLogits?.destroy();
      this.readLogits = this.device.createBuffer({ size: this.rowCapacity * this.config.vocabSize * 4, usage: USAGE.mapRead | USAGE.copyDst });
    }
    encoder.copyBufferToBuffer((this.activations as Activations).logits, 0, this.readLogits, 0, bytes);
    this.device.queue.submit([encoder.finish()]);
    cache.endStep(tokens[0].length);
    return this.read(this.readLogits, bytes);
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
    const querySet = this.device.createQuerySet({ type: 'timestamp', count: 2 * (6 * this.layers.length + 1) });
    const bytes = querySet.count * 8;
    const resolved = this.device.createBuffer({ size: bytes, usage: 0x200 /* QUERY_RESOLVE */ | USAGE.copySrc });
    const readable = this.device.createBuffer({ size: bytes, usage: USAGE.mapRead | USAGE.copyDst });
    try {
      const encoder = this.encode(cache, tokens, true, { querySet, labels });
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

  /** As logits, without the lm_head or anything read back: a prompt's chunks before its last. */
  advance(cache: KVCache, tokens: readonly (readonly number[])[]): void {
    this.device.queue.submit([this.encode(cache, tokens, false).finish()]);
    cache.endStep(tokens[0].length);
  }

  dispose(): void {
    for (const buffer of this.uniforms) buffer.destroy();
    for (const buffer of Object.values(this.activations ?? {})) buffer.destroy();
    this.activations = null;
    this.mask?.destroy();
    this.readLogits?.destroy();
    for (const binding of this.layerBindings) binding?.uniform.destroy();
    this.layerBindings = [];
  }

  /**
   * Writes the step's inputs and records its layers (and with `head` the final norm and lm_head
   * on each row's last token) into a new encoder: in one compute pass, or with `timing` each
   * dispatch in a pass of its own that writes its start and end into the query set, its label
   * pushed to `timing.labels`.
   */
  private encode(cache: KVCache, tokens: readonly (readonly number[])[], head: boolean, timing?: { querySet: GPUQuerySet; labels: string[] }): GPUCommandEncoder {
    const rows = tokens.length;
    const T = tokens[0]?.length ?? 0;
    if (rows !== cache.rows || T === 0 || tokens.some((r) => r.length !== T)) throw new Error(`decode step: ${rows} rows of equal, non-zero length wanted for ${cache.rows} cache rows`);
    const { hiddenSize: C, numHeads: H, numKvHeads: KV, headDim: D, rmsNormEps: eps, intermediateSize: I, vocabSize: V } = this.config;
    const targets = cache.reserve(T, { kvHeads: KV, headDim: D });
    const N = rows * T;
    const columns = cache.width + T;
    this.ensureCapacity(N, rows, columns);
    // Binding a tensor that tfjs still holds on the host queues its upload in tfjs's encoder.
    const bindings = this.layers.map((_, l) => this.bindLayer(l, targets[l].k, targets[l].v));
    // tfjs's queued work (uploads, the cache's growth, a merge) goes first.
    if (this.backend.commandEncoder) {
      this.backend.endComputePassEncoder();
      this.backend.submitQueue();
    }
    const a = this.activations as Activations;
    const { queue } = this.device;
    queue.writeBuffer(a.x, 0, this.model.embeddingRows(tokens.flat()));
    queue.writeBuffer(a.tables, 0, this.ropeTables(cache.lengths().flatMap((p) => Array.from({ length: T }, (_, t) => p + t))));
    queue.writeBuffer(this.mask as GPUBuffer, 0, cache.stepMask(T));
    queue.writeBuffer(this.stepUniform, 0, new Uint32Array([N, columns, cache.width, T]));
    const writeDims = (buffer: GPUBuffer, dims: { rows: number; k: number; n4: number; ldw4: number; inStride?: number; inOffset?: number }) => {
      const data = new ArrayBuffer(32);
      new Uint32Array(data, 0, 4).set([dims.rows, dims.k, dims.n4, dims.ldw4]);
      new Float32Array(data, 16, 1)[0] = eps;
      new Uint32Array(data, 20, 2).set([dims.inStride ?? dims.k, dims.inOffset ?? 0]);
      queue.writeBuffer(buffer, 0, data);
    };
    writeDims(this.dims.qkv, { rows: N, k: C, n4: ((H + 2 * KV) * D) / 4, ldw4: ((H + 2 * KV) * D) / 4 });
    writeDims(this.dims.o, { rows: N, k: H * D, n4: C / 4, ldw4: C / 4 });
    writeDims(this.dims.gateUp, { rows: N, k: C, n4: I / 4, ldw4: (2 * I) / 4 });
    writeDims(this.dims.down, { rows: N, k: I, n4: C / 4, ldw4: C / 4 });
    // The head reads each row's last token: row r's input starts at (r T + T - 1) C.
    writeDims(this.dims.lmHead, { rows, k: C, n4: V / 4, ldw4: V / 4, inStride: T * C, inOffset: (T - 1) * C });

    const encoder = this.device.createCommandEncoder();
    const shared = timing ? null : encoder.beginComputePass();
    const run = (label: string, pipeline: GPUComputePipeline, group: GPUBindGroup, x: number, y: number) => {
      const index = timing ? timing.labels.push(label) - 1 : 0;
      const pass = shared ?? encoder.beginComputePass({ timestampWrites: { querySet: timing?.querySet as GPUQuerySet, beginningOfPassWriteIndex: 2 * index, endOfPassWriteIndex: 2 * index + 1 } });
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, group);
      pass.dispatchWorkgroups(x, y);
      if (!shared) pass.end();
    };
    const linear = (label: string, d: LinearDispatch, inputs: number) => {
      const tile = rowsPerTile(inputs);
      run(label, this.linearPipeline(d.variant, tile), d.group, d.x, Math.ceil(inputs / tile));
    };
    const pairs = N * (H + 2 * KV) * (D / 2);
    bindings.forEach((binding, l) => {
      const [qkv, o, gateUp, down] = this.linearGroups[l];
      linear('qkv', qkv, N);
      run('rope', this.pipelines.rope, binding.rope, Math.ceil(pairs / WORKGROUP), 1);
      run('attention', this.pipelines.attention, binding.attention, H, N);
      linear('o', o, N);
      linear('gate_up', gateUp, N);
      linear('down', down, N);
    });
    if (head) linear('lm_head', this.headGroup as LinearDispatch, rows);
    shared?.end();
    return encoder;
  }

  /** cos and sin of each token's position, for q (times 1/sqrt(D)) then k: [tokens, 4, D/2], as Rope.tables rounds them. */
  private ropeTables(positions: readonly number[]): Float32Array {
    const half = this.config.headDim / 2;
    const scale = 1 / Math.sqrt(this.config.headDim);
    const out = new Float32Array(positions.length * 4 * half);
    positions.forEach((p, n) => {
      const base = n * 4 * half;
      for (let j = 0; j < half; j++) {
        const angle = Math.fround(p * this.invFreq[j]);
        const cos = Math.fround(Math.cos(angle));
        const sin = Math.fround(Math.sin(angle));
        out[base + j] = cos * scale;
        out[base + half + j] = sin * scale;
        out[base + 2 * half + j] = cos;
        out[base + 3 * half + j] = sin;
      }
    });
    return out;
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
      this.activations = {
        x: storage(N * C),
        h: storage(N * C),
        qkv: storage(N * (H + 2 * KV) * D),
        q: storage(N * H * D),
        heads: storage(N * H * D),
        act: storage(N * I),
        tables: storage(N * 2 * D),
        logits: storage(B * V),
        draws: storage(B * 2),
        drawn: storage(B * 2),
        readDrawn: this.create(B * 8, USAGE.mapRead | USAGE.copyDst),
      };
      this.maskCapacity = 0;
      this.makeLinearGroups();
    }
    if (tokens * columns > this.maskCapacity) {
      this.mask?.destroy();
      this.maskCapacity = this.tokenCapacity * Math.max(columns, 256) * 2;
      this.mask = this.device.createBuffer({ size: this.maskCapacity * 4, usage: USAGE.storage | USAGE.copyDst });
      this.layerBindings.forEach((b) => b?.uniform.destroy());
      this.layerBindings = this.layerBindings.map(() => null);
    }
  }

  /** Bind groups of every layer's four products, the lm_head's and the sampler's, over the current activation buffers. */
  private makeLinearGroups(): void {
    const a = this.activations as Activations;
    const group = (dims: GPUBuffer, input: GPUBuffer, weights: LinearWeights, output: GPUBuffer, options: { norm?: GPUBuffer; residual?: GPUBuffer; swiglu?: boolean }): LinearDispatch => {
      const variant = { norm: Boolean(options.norm), bias: weights.bias !== null, swiglu: options.swiglu ?? false, residual: Boolean(options.residual) };
      const entries = [dims, input, weights.weight, output, options.norm, weights.bias, options.residual].filter((b): b is GPUBuffer => Boolean(b));
      const { layout } = linearPipelines(this.device, this.pipelines, variant);
      const bindGroup = this.device.createBindGroup({ layout, entries: entries.map((buffer, binding) => ({ binding, resource: { buffer } })) });
      const n4 = (options.swiglu ? weights.n / 2 : weights.n) / 4;
      return { variant, group: bindGroup, x: Math.ceil(n4 / WORKGROUP) };
    };
    this.linearGroups = this.layers.map((w) => [
      group(this.dims.qkv, a.x, w.qkv, a.qkv, { norm: w.inputNorm }),
      group(this.dims.o, a.heads, w.o, a.h, { residual: a.x }),
      group(this.dims.gateUp, a.h, w.gateUp, a.act, { norm: w.postNorm, swiglu: true }),
      group(this.dims.down, a.act, w.down, a.x, { residual: a.h }),
    ]);
    this.headGroup = group(this.dims.lmHead, a.x, this.lmHead, a.logits, { norm: this.finalNorm });
    this.sampleGroup = this.device.createBindGroup({
      layout: this.pipelines.sample.getBindGroupLayout(0),
      entries: [this.sampleUniform, a.logits, a.draws, a.drawn].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
  }

  /** A layer's RoPE and attention bind groups, remade when the cache replaced its tensors. */
  private bindLayer(layer: number, keys: tf.Tensor4D, values: tf.Tensor4D): LayerBinding {
    const current = this.layerBindings[layer];
    if (current && current.keys === keys && current.values === values) return current;
    current?.uniform.destroy();
    const a = this.activations as Activations;
    const { numHeads: H, numKvHeads: KV, headDim: D } = this.config;
    const uniform = this.device.createBuffer({ size: 16, usage: USAGE.uniform | USAGE.copyDst });
    this.device.queue.writeBuffer(uniform, 0, new Uint32Array([H, KV, D, keys.shape[2]]));
    const k = this.buffer(keys);
    const v = this.buffer(values);
    const groupOf = (pipeline: GPUComputePipeline, buffers: GPUBuffer[]) =>
      this.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) });
    const binding: LayerBinding = {
      keys,
      values,
      uniform,
      rope: groupOf(this.pipelines.rope, [this.stepUniform, uniform, a.qkv, a.tables, a.q, k, v]),
      attention: groupOf(this.pipelines.attention, [this.stepUniform, uniform, a.q, k, v, this.mask as GPUBuffer, a.heads]),
    };
    this.layerBindings[layer] = binding;
    return binding;
  }

  /** The linear variant's pipeline for row tiles of `rows`, compiled on first use. */
  private linearPipeline(variant: Omit<LinearVariant, 'rows'>, rows: number): GPUComputePipeline {
    const entry = linearPipelines(this.device, this.pipelines, variant);
    let pipeline = entry.byRows.get(rows);
    if (!pipeline) {
      pipeline = this.device.createComputePipeline({
        layout: this.device.createPipelineLayout({ bindGroupLayouts: [entry.layout] }),
        compute: { module: this.device.createShaderModule({ code: linearShader({ ...variant, rows }) }), entryPoint: 'main' },
      });
      entry.byRows.set(rows, pipeline);
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

  private async read(buffer: GPUBuffer, bytes: number): Promise<Float32Array> {
    await buffer.mapAsync(1 /* GPUMapMode.READ */, 0, bytes);
    const values = new Float32Array(buffer.getMappedRange(0, bytes).slice(0));
    buffer.unmap();
    return values;
  }
}

function pipelinesFor(device: GPUDevice): Pipelines {
  let pipelines = pipelinesByDevice.get(device);
  if (!pipelines) {
    const compile = (code: string) => device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
    pipelines = { linear: new Map(), rope: compile(ROPE_STORE_SHADER), attention: compile(ATTENTION_SHADER), sample: compile(SAMPLE_SHADER) };
    pipelinesByDevice.set(device, pipelines);
  }
  return pipelines;
}

/** The bind group layout of a linear variant (shared by its pipelines of every row tile) and those pipelines. */
function linearPipelines(device: GPUDevice, pipelines: Pipelines, variant: Omit<LinearVariant, 'rows'>): { layout: GPUBindGroupLayout; byRows: Map<number, GPUComputePipeline> } {
  const key = `${+variant.norm}${+variant.bias}${+variant.swiglu}${+variant.residual}`;
  let entry = pipelines.linear.get(key);
  if (!entry) {
    const compute = 4; // GPUShaderStage.COMPUTE
    const layout = device.createBindGroupLayout({
      entries: linearBindings(variant).map((kind, binding) => ({
        binding,
        visibility: compute,
        buffer: { type: kind === 'uniform' ? 'uniform' : kind === 'read' ? 'read-only-storage' : 'storage' },
      })),
    });
    entry = { layout, byRows: new Map() };
    pipelines.linear.set(key, entry);
  }
  return entry;
}
