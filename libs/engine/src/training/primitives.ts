import * as tf from '@tensorflow/tfjs-core';
import type { LoadedModel } from '../loader';
import { LoraAttachment } from '../lora/lora-layer';
import { AdapterTensors, LoraSpec, LoraTarget, initLoraWeights } from '../lora/peft';
import { SafetensorsFile, TensorToWrite, writeSafetensors } from '../safetensors';
import { AdamW, AdamWOptions } from './adamw';
import { CheckpointedResult, NextTokenLoss, NextTokenRows, NextTokenValues, WeightedLogprobs, checkpointedGradients, nextTokenLogprobValues } from './checkpointing';
import { ensureTrainingGradients } from './gradients';

/**
 * Training primitives: forward, forward_backward with a built-in loss, optim_step. What a
 * Tinker training client asks of the service, and what a whole SFT or RL job is made of.
 *
 * A datum is one row: input tokens x[0..T-1], the target tokens y[0..T-1] (normally x shifted by
 * one: y[t] = x[t+1]) and per-position inputs of the loss. With l[t] = log p(y[t] | x[..t]) under
 * the current weights and, for the RL losses, q[t] the sampler's log-prob of y[t] and A[t] its
 * advantage, the built-in losses are sums over every position of every datum (Tinker's
 * definitions, docs "Loss functions"):
 *
 *   cross_entropy        L = - sum w[t] l[t]
 *   importance_sampling  L = - sum exp(l[t] - q[t]) A[t]
 *   ppo                  L = - sum min(r[t] A[t], clip(r[t], lo, hi) A[t]),   r = exp(l - q)
 *                             lo, hi = clip_low_threshold (0.8), clip_high_threshold (1.2)
 *   cispo                L = - sum stopgrad(clip(r[t], lo, hi)) A[t] l[t]
 *                             lo, hi = clip_low_threshold (0.0), clip_high_threshold (4.0)
 *   dro                  L = - sum (l[t] A[t] - beta/2 (l[t] - q[t])^2),       beta (0.05)
 *
 * forward_backward adds dL/dθ to the client's accumulated gradients; optim_step applies Adam to
 * them and clears them, so two forward_backward calls on halves of a batch and then one
 * optim_step take the same step as one call on the whole batch. Our own SFT and RL jobs
 * (LoraTrainer) run on the same client: their losses through accumulate(), their steps through
 * applyGradients().
 */

export const LOSS_FUNCTIONS = ['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro'] as const;
export type LossFunction = (typeof LOSS_FUNCTIONS)[number];

/** The loss_fn_config keys each loss reads, with their defaults. */
export const LOSS_CONFIG_DEFAULTS: Record<LossFunction, Record<string, number>> = {
  cross_entropy: {},
  importance_sampling: {},
  ppo: { clip_low_threshold: 0.8, clip_high_threshold: 1.2 },
  cispo: { clip_low_threshold: 0.0, clip_high_threshold: 4.0 },
  dro: { beta: 0.05 },
};

/** The loss_fn_inputs each loss needs besides target_tokens, each one number per position. */
export const LOSS_INPUTS: Record<LossFunction, readonly string[]> = {
  cross_entropy: ['weights'],
  importance_sampling: ['logprobs', 'advantages'],
  ppo: ['logprobs', 'advantages'],
  cispo: ['logprobs', 'advantages'],
  dro: ['logprobs', 'advantages'],
};

export interface TrainingDatum {
  /** Input tokens x, T of them. */
  inputTokens: number[];
  /** Target tokens y, T of them. */
  targetTokens: number[];
  /** The loss's per-position inputs (LOSS_INPUTS), T numbers each. */
  lossInputs: Record<string, ArrayLike<number>>;
}

export interface ForwardOutput {
  /** Per datum, log p(y[t]) under the weights before the call, T numbers. */
  logprobs: Float32Array[];
  /** `name:reduction`, as Tinker merges them: `loss:sum`. */
  metrics: Record<string, number>;
}

/** Adam's settings for one optim_step, as the Tinker SDK sends them. */
export interface AdamParams {
  learningRate: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** Decoupled (AdamW) weight decay. */
  weightDecay: number;
  /** Clip the global gradient norm to this; 0 turns clipping off. */
  gradClipNorm: number;
}

export class InvalidTrainingInput extends Error {
  override name = 'InvalidTrainingInput';
}

/** The loss's config with defaults filled in; an unknown key is an error naming it. */
export function resolveLossConfig(lossFn: LossFunction, config: Record<string, number> = {}): Record<string, number> {
  const defaults = LOSS_CONFIG_DEFAULTS[lossFn];
  for (const key of Object.keys(config)) {
    if (!(key in defaults)) {
      const known = Object.keys(defaults);
      throw new InvalidTrainingInput(`loss_fn_config.${key} is not a setting of ${lossFn}${known.length ? ` (it takes ${known.join(', ')})` : ' (it takes none)'}`);
    }
  }
  return { ...defaults, ...config };
}

/** Checks the data against the model and the loss before any work; errors name the datum and field. */
export function validateData(data: TrainingDatum[], lossFn: LossFunction | null, vocabSize: number, maxPositions: number): void {
  if (data.length === 0) throw new InvalidTrainingInput('data is empty');
  data.forEach((d, i) => {
    const T = d.inputTokens.length;
    if (T === 0) throw new InvalidTrainingInput(`data[${i}].model_input has no tokens`);
    if (T > maxPositions) throw new InvalidTrainingInput(`data[${i}] has ${T} tokens, more than the model's ${maxPositions} positions`);
    if (d.targetTokens.length !== T) throw new InvalidTrainingInput(`data[${i}].loss_fn_inputs.target_tokens has ${d.targetTokens.length} values for ${T} input tokens`);
    for (const [name, ids] of [['model_input', d.inputTokens], ['loss_fn_inputs.target_tokens', d.targetTokens]] as const) {
      const bad = ids.find((id) => !(Number.isInteger(id) && id >= 0 && id < vocabSize));
      if (bad !== undefined) throw new InvalidTrainingInput(`data[${i}].${name} holds token id ${bad}, outside the vocabulary of ${vocabSize}`);
    }
    for (const name of lossFn ? LOSS_INPUTS[lossFn] : []) {
      const values = d.lossInputs[name];
      if (!values) throw new InvalidTrainingInput(`data[${i}].loss_fn_inputs.${name} is missing (${lossFn} needs ${LOSS_INPUTS[lossFn!].join(', ')})`);
      if (values.length !== T) throw new InvalidTrainingInput(`data[${i}].loss_fn_inputs.${name} has ${values.length} values for ${T} input tokens`);
      for (let t = 0; t < T; t++) if (!Number.isFinite(values[t])) throw new InvalidTrainingInput(`data[${i}].loss_fn_inputs.${name}[${t}] is not a finite number`);
    }
  });
}

/** Datums as next-token rows right-padded to the longest (padding targets 0, never scored). */
export function datumRows(data: TrainingDatum[]): NextTokenRows {
  const T = Math.max(...data.map((d) => d.inputTokens.length));
  const pad = (ids: number[]) => [...ids, ...new Array<number>(T - ids.length).fill(0)];
  return { inputs: data.map((d) => pad(d.inputTokens)), targets: data.flatMap((d) => pad(d.targetTokens)), rows: data.length, length: T };
}

/** A loss's per-position inputs laid out [rows, T] like datumRows, 0 on padding. */
function paddedInput(data: TrainingDatum[], name: string, T: number): Float32Array {
  const out = new Float32Array(data.length * T);
  data.forEach((d, r) => {
    const values = d.lossInputs[name];
    for (let t = 0; t < d.inputTokens.length; t++) out[r * T + t] = values[t];
  });
  return out;
}

/** 1 on every real position of [rows, T], 0 on padding. */
function realPositions(data: TrainingDatum[], T: number): Float32Array {
  const out = new Float32Array(data.length * T);
  data.forEach((d, r) => out.fill(1, r * T, r * T + d.inputTokens.length));
  return out;
}

/**
 * The loss L of the datums as a differentiable scalar of the log-probs l [rows, T]; `seen` holds
 * the same log-probs as a constant, for the stop-gradient factors (CISPO's clipped ratio).
 */
export function primitiveLoss(lossFn: LossFunction, config: Record<string, number>, data: TrainingDatum[], l: tf.Tensor2D, seen: tf.Tensor2D): tf.Scalar {
  const [R, T] = l.shape;
  const input = (name: string) => tf.tensor2d(paddedInput(data, name, T), [R, T]);
  const real = tf.tensor2d(realPositions(data, T), [R, T]);
  const sumOver = (perPosition: tf.Tensor) => tf.neg(tf.sum(tf.mul(perPosition, real))) as tf.Scalar;
  switch (lossFn) {
    case 'cross_entropy':
      return sumOver(tf.mul(input('weights'), l));
    case 'importance_sampling': {
      const ratio = tf.exp(tf.sub(l, input('logprobs')));
      return sumOver(tf.mul(ratio, input('advantages')));
    }
    case 'ppo': {
      const A = input('advantages');
      const ratio = tf.exp(tf.sub(l, input('logprobs')));
      const clipped = tf.clipByValue(ratio, config.clip_low_threshold, config.clip_high_threshold);
      return sumOver(tf.minimum(tf.mul(ratio, A), tf.mul(clipped, A)));
    }
    case 'cispo': {
      const coefficient = tf.clipByValue(tf.exp(tf.sub(seen, input('logprobs'))), config.clip_low_threshold, config.clip_high_threshold);
      return sumOver(tf.mul(tf.mul(coefficient, input('advantages')), l));
    }
    case 'dro': {
      const quadratic = tf.square(tf.sub(l, input('logprobs')));
      return sumOver(tf.sub(tf.mul(l, input('advantages')), tf.mul(quadratic, 0.5 * config.beta)));
    }
  }
}

export interface TrainingClientOptions {
  /** Seed of a fresh adapter's A matrices. */
  seed?: number;
  /** Most tokens (rows x padded length) in one forward/backward; larger batches are split and summed. Default 2048. */
  microBatchTokens?: number;
  /** See TrainerOptions.keptProductsBytes. */
  keptProductsBytes?: number;
  /** Positions per lm_head chunk. Default 1024. */
  headChunk?: number;
  /** Adam's settings where a step does not give its own (optimStep always does). */
  optimizer?: AdamWOptions;
  /**
   * Keep the adapter attached to the model between calls: for a client that has the model to
   * itself (a training job's LoraTrainer). Otherwise it is attached only during each call, so
   * that several clients can share one model.
   */
  attached?: boolean;
}

/** What accumulating a loss's gradients reports: its value, its metrics and the log-probs it saw (see CheckpointedResult). */
export type AccumulatedLoss = Omit<CheckpointedResult, 'grads'>;

/** Where a loss over next-token rows reads: see CheckpointOptions. */
export interface AccumulateOptions {
  chunk: number;
  withEntropy: boolean;
  scored?: ArrayLike<number>;
}

/**
 * A LoRA adapter in training on a loaded model, with the state the primitives keep between
 * calls: the adapter's variables, the gradients accumulated since the last optim_step, and
 * Adam's moments. Several clients may share one model: each attaches its adapter only for the
 * length of a call, so calls on different clients must not overlap.
 */
export class LoraTrainingClient {
  private adapter: LoraAttachment;
  private adam: AdamW;
  private readonly accumulated = new Map<string, tf.Tensor>();
  private pending = 0;
  private readonly microBatchTokens: number;
  private readonly headChunk: number;
  private readonly keepAttached: boolean;

  constructor(
    readonly lm: LoadedModel,
    readonly spec: LoraSpec,
    init?: AdapterTensors,
    private readonly options: TrainingClientOptions = {},
  ) {
    ensureTrainingGradients();
    // The model's projections keep what their backward pass needs from now on (idempotent).
    for (const { linear } of lm.model.linears()) linear.enableBackward();
    lm.model.lmHead.enableBackward();
    this.keepAttached = options.attached ?? false;
    this.adapter = LoraAttachment.attach(lm.model, spec, init ?? initLoraWeights(lm.config, spec, options.seed ?? 0), { trainable: true });
    if (!this.keepAttached) this.adapter.detach();
    this.adam = new AdamW(options.optimizer);
    this.microBatchTokens = options.microBatchTokens ?? 2048;
    this.headChunk = options.headChunk ?? 1024;
  }

  /** The adapter's variables and hooks (attached to the model only during calls, unless `attached`). */
  get attachment(): LoraAttachment {
    return this.adapter;
  }

  get optimizer(): AdamW {
    return this.adam;
  }

  /** forward_backward calls whose gradients wait for the next optim_step. */
  get pendingGradients(): number {
    return this.pending;
  }

  /** optim_steps taken. */
  get step(): number {
    return this.adam.step;
  }

  /** Per-datum log-probs of the targets, and the loss's value when one is named; no gradient. */
  async forward(data: TrainingDatum[], lossFn: LossFunction | null = null, lossConfig?: Record<string, number>): Promise<ForwardOutput> {
    const config = lossFn ? resolveLossConfig(lossFn, lossConfig) : {};
    validateData(data, lossFn, this.lm.config.vocabSize, this.lm.config.maxPositionEmbeddings);
    return this.withAdapter(async () => {
      const logprobs: Float32Array[] = [];
      let loss = 0;
      for (const rows of this.microBatchesOf(data)) {
        const batch = rows.map((i) => data[i]);
        const next = datumRows(batch);
        const values = (await nextTokenLogprobValues(this.lm.model, next, this.headChunk)).logprobs;
        logprobs.push(...unpad(batch, values, next.length));
        if (lossFn) {
          const value = tf.tidy(() => {
            const l = tf.tensor2d(values, [next.rows, next.length]);
            return primitiveLoss(lossFn, config, batch, l, l);
          });
          loss += (await value.data())[0];
          value.dispose();
        }
      }
      return { logprobs: restoreOrder(data.length, this.microBatchesOf(data), logprobs), metrics: lossFn ? { 'loss:sum': loss } : ({} as Record<string, number>) };
    });
  }

  /** The loss's value and per-datum log-probs; its gradients are added to the accumulated ones. */
  async forwardBackward(data: TrainingDatum[], lossFn: LossFunction, lossConfig?: Record<string, number>): Promise<ForwardOutput> {
    const config = resolveLossConfig(lossFn, lossConfig);
    validateData(data, lossFn, this.lm.config.vocabSize, this.lm.config.maxPositionEmbeddings);
    return this.withAdapter(async () => {
      const groups = this.microBatchesOf(data);
      const logprobs: Float32Array[] = [];
      let loss = 0;
      for (const rows of groups) {
        const batch = rows.map((i) => data[i]);
        const next = datumRows(batch);
        const { value, values } = await this.addGradientsOf(next, (l, seen) => primitiveLoss(lossFn, config, batch, l, seen.logprobs), {
          chunk: this.headChunk,
          withEntropy: false,
          scored: realPositions(batch, next.length),
        });
        loss += value;
        logprobs.push(...unpad(batch, (values as NextTokenValues).logprobs, next.length));
      }
      this.pending++;
      return { logprobs: restoreOrder(data.length, groups, logprobs), metrics: { 'loss:sum': loss } };
    });
  }

  /**
   * forward_backward with any loss over next-token rows: its value, the log-probs it saw, and
   * its gradients added to the accumulated ones. What our SFT and RL jobs' steps are made of.
   */
  accumulate(rows: NextTokenRows, loss: NextTokenLoss, options: AccumulateOptions): Promise<AccumulatedLoss> {
    return this.withAdapter(() => this.addGradientsOf(rows, loss, options));
  }

  /**
   * accumulate() with a loss linear in the log-probs (WeightedLogprobs: SFT's cross-entropy),
   * whose step needs no tape for the loss: its value only (`values` null).
   */
  accumulateWeighted(rows: NextTokenRows, loss: WeightedLogprobs, options: AccumulateOptions): Promise<AccumulatedLoss> {
    return this.withAdapter(() => this.addGradientsOf(rows, loss, options));
  }

  /** Adam on the accumulated gradients (zeros where none), which are then cleared; the global gradient norm before clipping. */
  async applyGradients(learningRate: number, overrides: AdamWOptions = {}): Promise<number> {
    const vars = this.adapter.variables();
    const grads = vars.map((v) => this.accumulated.get(v.name) ?? tf.zerosLike(v));
    try {
      return await this.adam.apply(vars, grads, learningRate, overrides);
    } finally {
      tf.dispose(grads);
      this.accumulated.clear();
      this.pending = 0;
    }
  }

  /** Drops the accumulated gradients (a step that failed halfway). */
  discardGradients(): void {
    this.accumulated.forEach((t) => t.dispose());
    this.accumulated.clear();
    this.pending = 0;
  }

  /** One Adam step on the accumulated gradients (zeros where nothing was accumulated), which are then cleared. */
  async optimStep(params: AdamParams): Promise<{ metrics: Record<string, number> }> {
    if (!(params.learningRate >= 0)) throw new InvalidTrainingInput(`adam_params.learning_rate must be a number >= 0, got ${params.learningRate}`);
    const gradNorm = await this.applyGradients(params.learningRate, {
      beta1: params.beta1,
      beta2: params.beta2,
      eps: params.eps,
      weightDecay: params.weightDecay,
      maxGradNorm: params.gradClipNorm,
    });
    return { metrics: { 'grad_norm:mean': gradNorm, 'learning_rate:mean': params.learningRate } };
  }

  /** The accumulated gradients as numbers, one per adapter variable in attachment order, null where none (checks and diagnostics). */
  async gradientValues(): Promise<(Float32Array | null)[]> {
    const out: (Float32Array | null)[] = [];
    for (const v of this.adapter.variables()) {
      const t = this.accumulated.get(v.name);
      out.push(t ? ((await t.data()) as Float32Array) : null);
    }
    return out;
  }

  /** The adapter in PEFT names and layouts. */
  exportAdapter(): Promise<AdapterTensors> {
    return this.adapter.exportTensors();
  }

  /** The adapter and Adam's state (steps, moments): what save_state keeps. Accumulated gradients are not part of it. */
  async exportState(): Promise<TrainingState> {
    const { step, moments } = await this.adam.exportMoments(this.adapter.variables());
    return { spec: this.spec, adapter: await this.exportAdapter(), optimizer: { step, moments: momentsByName(this.adapter, moments) } };
  }

  /**
   * Replaces the adapter with a saved state's, and Adam's state with its (`optimizer`) or a
   * fresh one; accumulated gradients are dropped. The state must have this client's LoRA spec.
   */
  async loadState(state: TrainingState, options: { optimizer: boolean }): Promise<void> {
    const want = describeSpec(this.spec);
    if (describeSpec(state.spec) !== want) throw new InvalidTrainingInput(`the saved state's LoRA (${describeSpec(state.spec)}) is not this training client's (${want})`);
    // The old adapter leaves the hooks first: attaching the new one takes them over.
    const old = this.adapter;
    old.detach();
    let attachment: LoraAttachment;
    try {
      attachment = LoraAttachment.attach(this.lm.model, this.spec, state.adapter, { trainable: true });
    } catch (err) {
      if (this.keepAttached) old.reattach();
      throw err;
    }
    if (!this.keepAttached) attachment.detach();
    const optimizer = new AdamW(this.options.optimizer);
    if (options.optimizer) {
      const named = momentOrder(attachment);
      optimizer.importMoments(attachment.variables(), { step: state.optimizer.step, moments: named.map((name) => state.optimizer.moments.get(name) ?? null) });
    }
    old.dispose();
    this.adam.dispose();
    this.discardGradients();
    this.adapter = attachment;
    this.adam = optimizer;
  }

  dispose(): void {
    this.adapter.dispose();
    this.adam.dispose();
    this.discardGradients();
  }

  /** The loss's value (metrics, log-probs) on `rows`, its gradients added to the accumulated ones; the adapter attached. */
  private async addGradientsOf(rows: NextTokenRows, loss: NextTokenLoss | WeightedLogprobs, options: AccumulateOptions): Promise<AccumulatedLoss> {
    const { grads, ...result } = await checkpointedGradients(this.lm.model, rows, this.adapter.variablesByLayer(), loss, { ...options, keptProductsBytes: this.options.keptProductsBytes });
    this.addGradients(grads);
    return result;
  }

  private addGradients(grads: Map<string, tf.Tensor>): void {
    for (const [name, grad] of grads) {
      const previous = this.accumulated.get(name);
      if (!previous) {
        this.accumulated.set(name, grad);
        continue;
      }
      this.accumulated.set(name, tf.keep(tf.add(previous, grad)));
      previous.dispose();
      grad.dispose();
    }
  }

  private microBatchesOf(data: TrainingDatum[]): number[][] {
    return microBatches(
      data.map((d) => d.inputTokens.length + 1),
      this.microBatchTokens,
    );
  }

  private async withAdapter<T>(fn: () => Promise<T>): Promise<T> {
    if (this.keepAttached) return fn();
    this.adapter.reattach();
    try {
      return await fn();
    } finally {
      this.adapter.detach();
    }
  }
}

/** Each row's first T_i values out of [rows, T]. */
function unpad(batch: TrainingDatum[], values: Float32Array, T: number): Float32Array[] {
  return batch.map((d, r) => values.slice(r * T, r * T + d.inputTokens.length));
}

/** Per-datum outputs, produced micro-batch by micro-batch, back in the datums' order. */
function restoreOrder(n: number, groups: number[][], produced: Float32Array[]): Float32Array[] {
  const out = new Array<Float32Array>(n);
  groups.flat().forEach((datum, k) => (out[datum] = produced[k]));
  return out;
}

// ---------------------------------------------------------------- saved training state

/** A training client's adapter and optimizer, as save_state keeps them. */
export interface TrainingState {
  spec: LoraSpec;
  /** PEFT names and layouts. */
  adapter: AdapterTensors;
  /** Adam's step count and each variable's moments (in the variable's own layout), by momentName. */
  optimizer: { step: number; moments: Map<string, { m: Float32Array; v: Float32Array }> };
}

const STATE_FORMAT = 'trainyard-lora-training-state-v1';

function describeSpec(spec: LoraSpec): string {
  return `rank ${spec.r}, alpha ${spec.alpha}, ${[...spec.targetModules].sort().join('+')}`;
}

/** The name of each trainable variable's moments, in attachment.variables() order: `<layer>.<target>.A|B`. */
function momentOrder(attachment: LoraAttachment): string[] {
  return attachment.layers.flatMap((l) => [`${l.layer}.${l.target}.A`, `${l.layer}.${l.target}.B`]);
}

function momentsByName(attachment: LoraAttachment, moments: ({ m: Float32Array; v: Float32Array } | null)[]): TrainingState['optimizer']['moments'] {
  const out: TrainingState['optimizer']['moments'] = new Map();
  momentOrder(attachment).forEach((name, i) => {
    const moment = moments[i];
    if (moment) out.set(name, moment);
  });
  return out;
}

/** A training state as one safetensors file: the adapter under its PEFT names, moments as `optimizer.m.<name>` / `optimizer.v.<name>`. */
export function writeTrainingState(file: string, state: TrainingState): void {
  const tensors: Record<string, TensorToWrite> = {};
  for (const [name, t] of state.adapter) tensors[name] = { shape: t.shape, data: t.data };
  for (const [name, { m, v }] of state.optimizer.moments) {
    tensors[`optimizer.m.${name}`] = { shape: [m.length], data: m };
    tensors[`optimizer.v.${name}`] = { shape: [v.length], data: v };
  }
  writeSafetensors(file, tensors, {
    format: STATE_FORMAT,
    r: String(state.spec.r),
    alpha: String(state.spec.alpha),
    target_modules: state.spec.targetModules.join(','),
    optimizer_step: String(state.optimizer.step),
  });
}

export function readTrainingState(file: string): TrainingState {
  const st = SafetensorsFile.open(file);
  try {
    const meta = st.metadata;
    if (meta['format'] !== STATE_FORMAT) throw new InvalidTrainingInput(`${file} is not a saved training state`);
    const spec: LoraSpec = { r: Number(meta['r']), alpha: Number(meta['alpha']), targetModules: meta['target_modules'].split(',') as LoraTarget[] };
    const adapter: AdapterTensors = new Map();
    const moments: TrainingState['optimizer']['moments'] = new Map();
    for (const name of st.tensors.keys()) {
      if (name.startsWith('optimizer.m.')) {
        const key = name.slice('optimizer.m.'.length);
        moments.set(key, { m: st.read(name).data, v: st.read(`optimizer.v.${key}`).data });
      } else if (!name.startsWith('optimizer.')) {
        adapter.set(name, st.read(name));
      }
    }
    return { spec, adapter, optimizer: { step: Number(meta['optimizer_step']), moments } };
  } finally {
    st.close();
  }
}

/** Row indices grouped so that rows x longest row stays within `budget` tokens. */
export function microBatches(lengths: number[], budget: number): number[][] {
  const out: number[][] = [];
  let current: number[] = [];
  let longest = 0;
  lengths.forEach((length, i) => {
    if (current.length > 0 && Math.max(longest, length) * (current.length + 1) > budget) {
      out.push(current);
      current = [];
      longest = 0;
    }
    current.push(i);
    longest = Math.max(longest, length);
  });
  if (current.length > 0) out.push(current);
  return out;
}
