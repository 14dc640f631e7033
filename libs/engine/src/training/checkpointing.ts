import * as tf from '@tensorflow/tfjs-core';
import { nextTokenInputGradient, nextTokenLogitsGradient, NextTokenSoftmax, nextTokenSoftmax } from '../kernels/next-token-softmax';
import { storageBindingBytes } from '../kernels/webgpu-program';
import { contextTensors, type LlamaModel } from '../model/llama';
import { BlockBackwardContext, decoderBlockBackward, decoderBlockSaving, decoderBlockSavedBytes } from '../ops/decoder-block-gradient';
import { OutputSlot, OutputStore, withOutputStore } from '../ops/kept-outputs';
import { inputGradient } from '../ops/linear-gradient';
import { rmsNormBackward } from '../ops/norm';
import { SavedActivations } from '../ops/saved-activations';

/**
 * Most logits the lm_head makes at once, in floats (32 MB). With a 49k vocabulary that is
 * about 170 positions; [tokens, vocab] logits of a whole training step never exist at once.
 */
const MAX_LOGITS_PER_CHUNK = 1 << 23;
/**
 * The same on webgpu (256 MB, within the device's largest storage binding): a chunk of a few
 * positions leaves a GPU mostly idle, its softmax a workgroup a position and its input gradient
 * a few tiles of [positions, hidden] (a 55-position chunk of Qwen2.5's 151,936-token
 * vocabulary: 56 tiles), and the budget of kept softmax (KEPT_PRODUCTS_BYTES) holds the chunks'
 * exponentials whatever their size.
 */
const MAX_GPU_LOGITS_PER_CHUNK = 1 << 26;

/**
 * Most bytes a step keeps from its forward pass for the backward, unless
 * CheckpointOptions.keptProductsBytes says otherwise: the activations every block saves to run
 * its forward once, where they fit; else the projections' and attention's outputs of the
 * recomputed blocks (KeptProducts); then the lm_head chunks' softmax. Each spares the backward
 * a product or an attention pass. 1.5 GB: a 135M model's step of up to about 1,700 tokens runs
 * its forward once (31.5 KB a token and layer); one of the default packing's 2,048 tokens (1.93
 * GB of activations) recomputes, keeping every output (about 1.27 GB) and 10 of its 12 head
 * chunks (0.38 GB for all). The training worker's KEPT_PRODUCTS_MB sets it.
 */
export const KEPT_PRODUCTS_BYTES = 1536 << 20;

/**
 * Outputs kept from the first pass of an activation-checkpointed step for its recompute, within
 * a budget of bytes: frozen projections' products and attention's outputs, as the ops ask for
 * their slots (ops/kept-outputs.ts). The recompute then takes each kept output instead of
 * computing it again, and recomputes only what is cheap (norms, RoPE, activations), as
 * selective recomputation does (Korthikanti et al., 2022, "Reducing Activation Recomputation in
 * Large Transformer Models"). An output is kept by reference to the tensor the first pass made
 * (no copy) and handed over once.
 *
 * Each block's pass runs in during(layer, ...): its outputs are known by their order in the
 * pass, which the recompute repeats. The projections in `unread` (each block's
 * residualProjection) are never kept, and the recompute, which reads only gradients through
 * them, skips their products.
 */
export class KeptProducts implements OutputStore {
  private readonly values = new Map<string, tf.Tensor2D>();
  private bytes = 0;
  private recording = true;
  private layer = -1;
  private next = 0;

  constructor(
    private readonly budgetBytes: number,
    private readonly unread: ReadonlySet<object> = new Set(),
  ) {}

  /** Bytes of outputs kept now. */
  get keptBytes(): number {
    return this.bytes;
  }

  /** Runs block `layer`'s pass with this store in effect. */
  during<T>(layer: number, pass: () => T): T {
    [this.layer, this.next] = [layer, 0];
    return withOutputStore(this, pass);
  }

  /** The first pass is over: from now on slots hand the kept outputs out, and keep nothing. */
  replay(): void {
    this.recording = false;
  }

  slot(op?: object): OutputSlot {
    const key = `${this.layer}.${this.next++}`;
    const unread = op !== undefined && this.unread.has(op);
    return {
      unread: unread && !this.recording,
      take: () => this.take(key),
      keep: (value) => {
        if (!unread) this.keep(key, value);
      },
    };
  }

  /** First pass: keeps `value` as the output under `key` while the budget allows. */
  keep(key: string, value: tf.Tensor2D): void {
    const bytes = 4 * value.size;
    if (!this.recording || this.values.has(key) || this.bytes + bytes > this.budgetBytes) return;
    this.values.set(key, tf.keep(value.clone()));
    this.bytes += bytes;
  }

  /** Recompute: the output kept under `key`, now the caller's (a tensor of the current scope), or null. */
  take(key: string): tf.Tensor2D | null {
    const kept = this.recording ? undefined : this.values.get(key);
    if (!kept) return null;
    this.values.delete(key);
    this.bytes -= 4 * kept.size;
    const value = kept.clone();
    kept.dispose();
    return value;
  }

  dispose(): void {
    this.values.forEach((t) => t.dispose());
    this.values.clear();
    this.bytes = 0;
  }
}

/** Rows of token ids right-padded to one length T, as next-token inputs and targets. */
export interface NextTokenRows {
  /** [rows][T]: tokens 0..T-1 of each row. */
  inputs: number[][];
  /** rows * T, row-major: the token after each input (0 past a row's end). */
  targets: number[];
  rows: number;
  length: number;
}

export function nextTokenRows(sequences: number[][]): NextTokenRows {
  const T = Math.max(...sequences.map((r) => r.length)) - 1;
  if (T < 1) throw new Error('a sequence needs at least two tokens');
  const pad = (r: number[], from: number) => {
    const out = r.slice(from, from + T);
    while (out.length < T) out.push(0);
    return out;
  };
  return { inputs: sequences.map((r) => pad(r, 0)), targets: sequences.flatMap((r) => pad(r, 1)), rows: sequences.length, length: T };
}

/** Positions per lm_head chunk: at most `requested`, and few enough that chunk x vocab stays within the backend's bound. */
export function headChunkSize(requested: number, vocabSize: number): number {
  const most = tf.getBackend() === 'webgpu' ? Math.min(MAX_GPU_LOGITS_PER_CHUNK, storageBindingBytes() / 4) : MAX_LOGITS_PER_CHUNK;
  return Math.max(1, Math.min(requested, Math.floor(most / vocabSize)));
}

/**
 * log p(target) for each row of `hidden` [n, hidden] (the final-normed states), differentiable
 * w.r.t. hidden, and with `withEntropy` the entropy of each position's distribution.
 */
export function headLogprobs(model: LlamaModel, hidden: tf.Tensor2D, targets: number[], withEntropy: boolean): { logprobs: tf.Tensor1D; entropy: tf.Tensor1D | null } {
  const logSoftmax = tf.logSoftmax(model.lmHead.forward(hidden));
  const oneHot = tf.oneHot(tf.tensor1d(targets, 'int32'), model.config.vocabSize);
  const logprobs = tf.sum(tf.mul(logSoftmax, oneHot), 1) as tf.Tensor1D;
  const entropy = withEntropy ? (tf.neg(tf.sum(tf.mul(tf.exp(logSoftmax), logSoftmax), 1)) as tf.Tensor1D) : null;
  return { logprobs, entropy };
}

/** Next-token log-probs and, when asked for, entropies, as numbers. */
export interface NextTokenValues {
  logprobs: Float32Array;
  entropy: Float32Array | null;
}

/**
 * Next-token log-probs (and entropies) of final-normed `hidden` [rows * T, C] as numbers, head in
 * chunks: each chunk's softmax in one pass (headSoftmax) unless the lm_head has adapters.
 */
async function headValues(model: LlamaModel, hidden: tf.Tensor2D, targets: number[], chunk: number, withEntropy: boolean): Promise<NextTokenValues> {
  const { parts } = headPass(model, hidden, targets, chunk, withEntropy, null);
  try {
    return await valuesOf(parts, targets.length, withEntropy);
  } finally {
    tf.dispose(parts.flat());
  }
}

/**
 * The head's chunks: each chunk's `parts`, [log-probs] or [log-probs, entropies], as tensors the
 * caller reads (valuesOf) or reduces, then disposes; and with a `budget` of bytes (not null) each
 * chunk's softmax (KeptSoftmax) kept for the backward pass while the kept ones fit it, the first
 * chunk whatever its size (headChunkSize): a kept chunk needs no second
 * product with the lm_head. `kept` has one entry per chunk, null where not kept (always, where
 * the lm_head has adapters).
 */
function headPass(
  model: LlamaModel,
  hidden: tf.Tensor2D,
  targets: number[],
  chunk: number,
  withEntropy: boolean,
  budget: number | null,
): { parts: tf.Tensor[][]; kept: (KeptSoftmax | null)[] } {
  const N = targets.length;
  const size = headChunkSize(chunk, model.config.vocabSize);
  const kept: (KeptSoftmax | null)[] = [];
  // Each chunk's log-probs (and entropies), for the caller to read once all are queued: a read a
  // chunk would leave a GPU idle while the next chunk is encoded.
  const parts: tf.Tensor[][] = [];
  let keptBytes = 0;
  try {
    for (let start = 0; start < N; start += size) {
      const n = Math.min(size, N - start);
      const ids = targets.slice(start, start + n);
      const h = () => tf.slice(hidden, [start, 0], [n, -1]);
      let part: tf.Tensor[];
      let softmax: KeptSoftmax | null = null;
      if (model.lmHead.hasAdapters) {
        part = tf.tidy(() => {
          const head = headLogprobs(model, h(), ids, withEntropy);
          return head.entropy ? [head.logprobs, head.entropy] : [head.logprobs];
        });
      } else {
        ({ part, kept: softmax } = tf.tidy(() => headSoftmax(model, h(), ids, withEntropy)));
      }
      const bytes = softmax ? keptTensors(softmax).reduce((sum, t) => sum + 4 * t.size, 0) : 0;
      const keep = softmax !== null && budget !== null && (start === 0 || keptBytes + bytes <= budget);
      kept.push(keep ? softmax : null);
      if (keep) keptBytes += bytes;
      else if (softmax) tf.dispose(keptTensors(softmax));
      parts.push(part);
    }
    return { parts, kept };
  } catch (err) {
    for (const softmax of kept) if (softmax) tf.dispose(keptTensors(softmax));
    tf.dispose(parts.flat());
    throw err;
  }
}

/** The chunks' parts ([log-probs] or [log-probs, entropies], in order) as N numbers each, in one readback. */
async function valuesOf(parts: tf.Tensor[][], N: number, withEntropy: boolean): Promise<NextTokenValues> {
  const all = tf.tidy(() => tf.concat(headTensors(parts, withEntropy)));
  try {
    return valuesAt((await all.data()) as Float32Array, 0, N, withEntropy);
  } finally {
    all.dispose();
  }
}

/** The chunks' log-probs, then (withEntropy) their entropies, each one tensor over all chunks (the chunk's own where there is one). */
function headTensors(parts: tf.Tensor[][], withEntropy: boolean): tf.Tensor1D[] {
  const whole = (k: number) => (parts.length === 1 ? parts[0][k] : tf.concat(parts.map((part) => part[k]))) as tf.Tensor1D;
  return withEntropy ? [whole(0), whole(1)] : [whole(0)];
}

/** The N log-probs (and N entropies after them) that `read` holds from `at`, as headTensors laid them out. */
function valuesAt(read: Float32Array, at: number, N: number, withEntropy: boolean): NextTokenValues {
  return { logprobs: read.slice(at, at + N), entropy: withEntropy ? read.slice(at + N, at + 2 * N) : null };
}

/**
 * What the backward pass through the head needs of a chunk's softmax (headInputGradient): the
 * softmax kernel's exponentials and row sums on wasm, else tfjs's probabilities.
 */
type KeptSoftmax = Pick<NextTokenSoftmax, 'exps' | 'stats'> | { probabilities: tf.Tensor2D };

function keptTensors(kept: KeptSoftmax): tf.Tensor[] {
  return 'probabilities' in kept ? [kept.probabilities] : [kept.exps, kept.stats];
}

/**
 * The lm_head's logits of final-normed `hidden` [n, C] and their softmax in one pass, without a
 * tape: `part` is log p(target) [n] (and the entropy [n] with `withEntropy`), `kept` what
 * headInputGradient needs. On wasm the softmax kernel (one pass of exponentials); elsewhere
 * tfjs ops, one exp over [n, vocab] as well.
 */
function headSoftmax(model: LlamaModel, hidden: tf.Tensor2D, targets: number[], withEntropy: boolean): { part: tf.Tensor[]; kept: KeptSoftmax } {
  const N = targets.length;
  const V = model.config.vocabSize;
  const logits = model.lmHead.forward(hidden);
  const fused = nextTokenSoftmax(logits, tf.tensor1d(targets, 'int32'));
  if (fused) return { part: withEntropy ? [fused.logprobs, fused.entropy] : [fused.logprobs], kept: { exps: fused.exps, stats: fused.stats } };
  // With z = logits - max and s = sum exp z: p = exp z / s, log p = z - log s, H = log s - sum p z.
  const z = tf.sub(logits, tf.max(logits, 1, true));
  const e = tf.exp(z);
  const sum = tf.sum(e, 1, true);
  const probabilities = tf.div(e, sum) as tf.Tensor2D;
  const logSum = tf.reshape(tf.log(sum), [N]);
  const at = tf.tensor1d(targets.map((target, i) => i * V + target), 'int32');
  const logprobs = tf.sub(tf.gather(tf.reshape(z, [N * V]), at), logSum);
  return { part: withEntropy ? [logprobs, tf.sub(logSum, tf.sum(tf.mul(probabilities, z), 1))] : [logprobs], kept: { probabilities } };
}

/**
 * d loss / d hidden through the head, from the kept softmax: d log p(target) / d logits =
 * onehot(target) - p, so the logits' gradient is dLogprobs (onehot - p), and the lm_head's
 * input gradient of that is the one product this step needs with the lm_head. On webgpu one
 * program makes the logits' gradient inside that product (nextTokenInputGradient).
 */
function headInputGradient(model: LlamaModel, kept: KeptSoftmax, targets: number[], dLogprobs: tf.Tensor1D): tf.Tensor2D {
  return tf.tidy(() => {
    const ids = tf.tensor1d(targets, 'int32');
    if ('probabilities' in kept) {
      return inputGradient(model.lmHead, tf.mul(tf.sub(tf.oneHot(ids, model.config.vocabSize), kept.probabilities), tf.expandDims(dLogprobs, 1)) as tf.Tensor2D);
    }
    return nextTokenInputGradient(kept, ids, dLogprobs, model.lmHead) ?? inputGradient(model.lmHead, nextTokenLogitsGradient(kept, ids, dLogprobs));
  });
}

/** Next-token log-probs [rows * T] (and entropies) as numbers: no tape, one block at a time. */
export async function nextTokenLogprobValues(model: LlamaModel, rows: NextTokenRows, chunk: number, withEntropy = false): Promise<NextTokenValues> {
  const hidden = tf.tidy(() => model.hidden(rows.inputs));
  try {
    return await headValues(model, hidden, rows.targets, chunk, withEntropy);
  } finally {
    hidden.dispose();
  }
}

/** Next-token log-probs [rows, T] and, when asked for, entropies, as constants (no gradient flows through them). */
export interface NextTokenTensors {
  logprobs: tf.Tensor2D;
  entropy: tf.Tensor2D | null;
}

/** A loss with metrics: scalars with no gradient, read back with the loss's value. */
export interface LossWithMetrics {
  loss: tf.Scalar;
  metrics: Record<string, tf.Scalar | undefined>;
}

/**
 * A loss over next-token log-probs [rows, T] (differentiable), built on the device. `seen` holds
 * the same log-probs (and the entropies when asked for) as constants: what a loss needs for masks,
 * ratios and metrics, which have no gradient. Nothing is read back while the step is recorded:
 * the loss's value, its metrics and the log-probs are read once the backward is.
 */
export type NextTokenLoss = (logprobs: tf.Tensor2D, seen: NextTokenTensors) => tf.Scalar | LossWithMetrics;

/**
 * A loss linear in the log-probs, sum(weights * log p) over [rows, T] row-major (SFT's
 * cross-entropy: -mask / trainable tokens). Its gradient is the weights whatever the log-probs
 * are, so the step needs neither the log-probs laid out [rows, T] nor a tape for the loss: its
 * value is reduced on the device from the head's chunks.
 */
export interface WeightedLogprobs {
  weights: Float32Array;
}

export interface CheckpointOptions {
  /** Positions per lm_head chunk. */
  chunk: number;
  withEntropy: boolean;
  /**
   * A weight per position of [rows, T], row-major: the loss reads the log-prob (and entropy)
   * only where it is nonzero (SFT's trainable tokens, RL's mask), so the lm_head, a fifth of a
   * 135M model's products, runs only there. Elsewhere the loss sees 0 for both and its gradient
   * is dropped. Absent: every position.
   */
  scored?: ArrayLike<number>;
  /**
   * Most bytes kept from the forward pass for the backward (default KEPT_PRODUCTS_BYTES): the
   * blocks' activations for one forward pass where they all fit, else the projections' and
   * attention's outputs for the recompute; then lm_head softmax.
   */
  keptProductsBytes?: number;
  /** Whether the blocks run their forward once where their activations fit the budget (default true); false: every block recomputed. */
  singlePass?: boolean;
}

/** The indices of the nonzero weights, or null for all positions (none given, all nonzero, or none nonzero). */
function scoredPositions(weights: ArrayLike<number> | undefined, n: number): number[] | null {
  if (!weights) return null;
  if (weights.length !== n) throw new Error(`${weights.length} scored weights for ${n} positions`);
  const at: number[] = [];
  for (let i = 0; i < n; i++) if (weights[i] !== 0) at.push(i);
  return at.length === 0 || at.length === n ? null : at;
}

/** Values of the scored positions `at` placed among n positions, 0 elsewhere. */
function spread(values: NextTokenValues, at: ArrayLike<number>, n: number): NextTokenValues {
  const place = (part: Float32Array) => {
    const out = new Float32Array(n);
    for (let i = 0; i < at.length; i++) out[at[i]] = part[i];
    return out;
  };
  return { logprobs: place(values.logprobs), entropy: values.entropy && place(values.entropy) };
}

/**
 * What a step reads back once its backward is recorded: one tensor (a single readback) holding
 * the loss's value, its metrics and, for a NextTokenLoss, the scored log-probs and entropies;
 * `unpack` turns the numbers read into the step's result. And the gradient of the loss w.r.t.
 * the scored positions' log-probs, which the backward starts from.
 */
interface LossReadout {
  readout: tf.Tensor1D;
  dLogprobs: tf.Tensor1D;
  unpack(read: Float32Array): { value: number; metrics: Record<string, number>; values: NextTokenValues | null };
}

/**
 * A NextTokenLoss on the head's chunks: the log-probs laid out [R, T] (0 where not scored), the
 * loss and its gradient under a tape, nothing read back. Disposes `parts`.
 */
function lossOnDevice(loss: NextTokenLoss, parts: tf.Tensor[][], scored: { positions: number[]; at: tf.Tensor1D } | null, R: number, T: number, withEntropy: boolean): LossReadout {
  const N = scored ? scored.positions.length : R * T;
  const names: string[] = [];
  let tensors: { readout: tf.Tensor1D; dLogprobs: tf.Tensor1D };
  try {
    tensors = tf.tidy(() => {
      const laidOut = (t: tf.Tensor1D) => tf.reshape(scored ? tf.scatterND(tf.reshape(scored.at, [N, 1]), t, [R * T]) : t, [R, T]) as tf.Tensor2D;
      const head = headTensors(parts, withEntropy);
      const [logprobs, entropy = null] = head;
      const seen = { logprobs: laidOut(logprobs), entropy: entropy && laidOut(entropy) };
      // tfjs frees what the loss makes but its result, so the metrics are kept, then freed here.
      const metrics: tf.Scalar[] = [];
      try {
        const { value, grad } = tf.valueAndGrad((lp: tf.Tensor) => {
          const out = loss(lp as tf.Tensor2D, seen);
          if (out instanceof tf.Tensor) return out;
          for (const [name, metric] of Object.entries(out.metrics)) {
            if (!metric) continue;
            names.push(name);
            metrics.push(tf.keep(metric));
          }
          return out.loss;
        })(tf.clone(seen.logprobs));
        const all = tf.reshape(grad, [R * T]) as tf.Tensor1D;
        const readout = tf.concat([tf.reshape(value, [1]), ...metrics.map((m) => tf.reshape(m, [1])), ...head]) as tf.Tensor1D;
        return { readout, dLogprobs: scored ? (tf.gather(all, scored.at) as tf.Tensor1D) : all };
      } finally {
        tf.dispose(metrics);
      }
    });
  } finally {
    tf.dispose(parts.flat());
  }
  const unpack = (read: Float32Array) => {
    const values = valuesAt(read, 1 + names.length, N, withEntropy);
    return {
      value: read[0],
      metrics: Object.fromEntries(names.map((name, i) => [name, read[1 + i]])),
      values: scored ? spread(values, scored.positions, R * T) : values,
    };
  };
  return { ...tensors, unpack };
}

/** sum(weights * log p) reduced on the device from the head's chunks; its gradient, the weights of the scored positions. Disposes `parts`. */
function weightedLoss(weights: Float32Array, parts: tf.Tensor[][], scored: number[] | null): LossReadout {
  const scoredWeights = scored ? Float32Array.from(scored, (i) => weights[i]) : weights;
  try {
    const tensors = tf.tidy(() => {
      let start = 0;
      const sums = parts.map(([logprobs]) => {
        const part = tf.sum(tf.mul(logprobs, tf.tensor1d(scoredWeights.subarray(start, start + logprobs.size))));
        start += logprobs.size;
        return part;
      });
      return { readout: tf.reshape(sums.length === 1 ? sums[0] : tf.addN(sums), [1]) as tf.Tensor1D, dLogprobs: tf.tensor1d(scoredWeights) };
    });
    return { ...tensors, unpack: (read) => ({ value: read[0], metrics: {}, values: null }) };
  } finally {
    tf.dispose(parts.flat());
  }
}

export interface CheckpointedResult {
  value: number;
  /** The loss's metrics (LossWithMetrics), by name. */
  metrics: Record<string, number>;
  /** The log-probs (and entropies) the loss saw, 0 where not scored; null for a WeightedLogprobs loss. */
  values: NextTokenValues | null;
  /** By variable name, like tf.variableGrads; the caller disposes them. */
  grads: Map<string, tf.Tensor>;
}

/**
 * The value of loss(log p(targets)) and its gradients w.r.t. each block's trainable variables,
 * with the forward pass run once where memory allows, and by activation checkpointing (Chen et
 * al., 2016, "Training Deep Nets with Sublinear Memory Cost") where it does not:
 *
 * 1. forward through the blocks without a gradient tape, keeping each block's input; where the
 *    blocks' activations fit keptProductsBytes (decoderBlockSavedBytes), each also saves what
 *    its explicit backward reads (ops/decoder-block-gradient.ts);
 * 2. the lm_head in chunks of positions; then the loss and d loss / d log-probs, on the device
 *    (nothing is read back until the backward is recorded: then the loss's value, its metrics
 *    and the log-probs, in one readback);
 * 3. back through the head chunk by chunk (each chunk's logits and softmax recomputed,
 *    unless step 2 kept its softmax) and the final norm;
 * 4. back through the blocks from the last: by each block's explicit backward from what it
 *    saved; or, where they did not fit, each is run again under a tape, and its vector-Jacobian
 *    product gives the gradient for its input and for its variables.
 *
 * Memory then grows with layers x tokens x hidden, plus the saved activations within the
 * budget, plus one block's intermediates, instead of every intermediate of every layer (which,
 * copied by the wasm backend for the tape, ran a 135M model out of memory at a few hundred
 * tokens). Recomputing costs a second forward pass; its first pass keeps the outputs of the
 * projections the recompute reads (q|k|v, o, gate|up) and of attention, and step 2 the chunks'
 * softmax, within the budget, so that the backward computes them again only where they did
 * not fit.
 */
export async function checkpointedGradients(
  model: LlamaModel,
  rows: NextTokenRows,
  blockVariables: tf.Variable[][],
  loss: NextTokenLoss | WeightedLogprobs,
  options: CheckpointOptions,
): Promise<CheckpointedResult> {
  const { rows: R, length: T } = rows;
  const budget = options.keptProductsBytes ?? KEPT_PRODUCTS_BYTES;
  // Every block runs its forward once (onePass[layer] holds what it saved) where all their saved
  // activations fit the budget; otherwise every block is recomputed, keeping its products within
  // the budget. Not some of each: a byte of kept products or head softmax spares a recompute
  // more work (a product) than a byte of saved activations spares one that keeps its products
  // (norms, RoPE, activations and the tape).
  const savedBytes = model.blocks.reduce((sum, block) => sum + decoderBlockSavedBytes(block, R * T), 0);
  const once = options.singlePass !== false && savedBytes <= budget;
  const onePass = model.blocks.map(() => (once ? new SavedActivations() : null));
  const products = new KeptProducts(once ? 0 : budget, new Set(model.blocks.flatMap((b) => b.residualProjection ?? [])));
  const ctx = model.passContext(R, T);
  const backwardContext = new BlockBackwardContext(ctx);
  const kept: tf.Tensor[] = [];
  try {
    // 1. Forward, keeping the input of every block (and, in the blocks run once, what their
    // backward reads).
    const inputs: tf.Tensor2D[] = [];
    let x = model.embed(rows.inputs.flat());
    kept.push(x);
    for (const [layer, block] of model.blocks.entries()) {
      inputs.push(x);
      const input = x;
      const saved = onePass[layer];
      x = tf.tidy(() => (saved ? decoderBlockSaving(block, input, ctx, saved) : products.during(layer, () => block.forward(input, ctx))));
      kept.push(x);
    }
    const last = x;
    products.replay();

    // 2. The log-probs, the loss and its gradient w.r.t. them, on the device, the lm_head run
    // only on the scored positions (a WeightedLogprobs loss's gradient is its weights). The
    // chunks' softmax is kept for step 3 within what the kept products left of the budget (the
    // first chunk's whatever it is).
    const normed = tf.tidy(() => model.finalNorm.forward(last));
    kept.push(normed);
    const scored = scoredPositions(options.scored, R * T);
    const at = scored && tf.tensor1d(scored, 'int32');
    const headInput = at ? tf.gather(normed, at) : normed;
    if (at) kept.push(at, headInput);
    const targets = scored ? scored.map((i) => rows.targets[i]) : rows.targets;
    const N = targets.length;
    const size = headChunkSize(options.chunk, model.config.vocabSize);
    const headBudget = Math.max(0, budget - (once ? savedBytes : 0) - products.keptBytes);
    const { parts: headParts, kept: softmaxes } = headPass(model, headInput, targets, options.chunk, options.withEntropy, headBudget);
    for (const softmax of softmaxes) if (softmax) kept.push(...keptTensors(softmax));
    const { readout, dLogprobs, unpack } =
      typeof loss === 'function' ? lossOnDevice(loss, headParts, scored && at && { positions: scored, at }, R, T, options.withEntropy) : weightedLoss(loss.weights, headParts, scored);
    // Read while the backward is recorded, not before: waiting for it here would leave the GPU
    // idle for a round trip and the first of the backward's dispatches.
    kept.push(readout, dLogprobs);
    const read = readout.data() as Promise<Float32Array>;
    // Awaited after step 4; a throw before then must not leave it an unhandled rejection.
    read.catch(() => undefined);

    // 3. Back through the head a chunk of positions at a time, from the chunk's kept softmax
    // or with its logits and softmax recomputed (through the tape only where the lm_head has
    // adapters, whose gradients it needs), then the final norm by its explicit backward (ops/norm.ts).
    const parts: tf.Tensor2D[] = [];
    for (let start = 0, i = 0; start < N; start += size, i++) {
      const n = Math.min(size, N - start);
      const ids = targets.slice(start, start + n);
      const [h, dPart] = [tf.slice(headInput, [start, 0], [n, -1]), tf.slice(dLogprobs, [start], [n])];
      const keptSoftmax = softmaxes[i];
      try {
        if (keptSoftmax) {
          parts.push(headInputGradient(model, keptSoftmax, ids, dPart));
        } else if (model.lmHead.hasAdapters) {
          parts.push(tf.tidy(() => tf.grad((x: tf.Tensor) => headLogprobs(model, x as tf.Tensor2D, ids, false).logprobs)(h, dPart)) as tf.Tensor2D);
        } else {
          const { part, kept: chunkSoftmax } = tf.tidy(() => headSoftmax(model, h, ids, false));
          tf.dispose(part);
          try {
            parts.push(headInputGradient(model, chunkSoftmax, ids, dPart));
          } finally {
            tf.dispose(keptTensors(chunkSoftmax));
          }
        }
      } finally {
        // A kept softmax is freed once used (and again, harmlessly, with the rest of `kept`).
        tf.dispose(keptSoftmax ? [h, dPart, ...keptTensors(keptSoftmax)] : [h, dPart]);
      }
    }
    let dx = tf.tidy(() => {
      const dHead = parts.length === 1 ? parts[0] : tf.concat(parts);
      // Positions the loss does not read get no gradient from the head.
      const dNormed = (at ? tf.scatterND(tf.reshape(at, [N, 1]), dHead, normed.shape) : dHead) as tf.Tensor2D;
      const norm = model.finalNorm;
      return rmsNormBackward(last, norm.weight, dNormed, norm.epsilon, norm.eps);
    });
    parts.forEach((p) => p.dispose());

    // 4. Back through the blocks from the last. A block run once: its explicit backward from
    // what its forward saved (ops/decoder-block-gradient.ts). Any other: recomputed under a
    // tape. Only the gradients of the recomputed pass are used, which spares each block its
    // residual projection's product; the other projections' outputs and attention's are the
    // first pass's, where they were kept.
    const grads = new Map<string, tf.Tensor>();
    for (let layer = model.blocks.length - 1; layer >= 0; layer--) {
      const block = model.blocks[layer];
      const variables = blockVariables[layer] ?? [];
      const dy = dx;
      const saved = onePass[layer];
      const [dInput, ...dVariables] = tf.tidy(() => {
        if (!saved) return tf.grads((input: tf.Tensor) => products.during(layer, () => block.forward(input as tf.Tensor2D, ctx)))([inputs[layer], ...variables], dy);
        const back = decoderBlockBackward(block, saved, dy, backwardContext);
        return [back.dx, ...variables.map((v) => back.grads.get(v) ?? tf.zerosLike(v))];
      });
      saved?.dispose();
      dy.dispose();
      dx = dInput as tf.Tensor2D;
      variables.forEach((v, i) => grads.set(v.name, dVariables[i]));
    }
    dx.dispose();
    return { ...unpack(await read), grads };
  } finally {
    kept.forEach((t) => t.dispose());
    onePass.forEach((saved) => saved?.dispose());
    backwardContext.dispose();
    products.dispose();
    contextTensors(ctx).forEach((t) => t.dispose());
  }
}
