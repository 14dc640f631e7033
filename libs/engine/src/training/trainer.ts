import * as tf from '@tensorflow/tfjs-core';
import type { LoadedModel } from '../loader';
import { LoraAttachment } from '../lora/lora-layer';
import { AdapterTensors, DEFAULT_LORA_SPEC, LoraSpec } from '../lora/peft';
import type { LlamaModel } from '../model/llama';
import { AdamW, AdamWOptions, REFERENCE_ADAMW } from './adamw';
import { NextTokenLoss, WeightedLogprobs, headLogprobs, nextTokenLogprobValues, nextTokenRows } from './checkpointing';
import { LoraTrainingClient, microBatches } from './primitives';
import { rlPolicyLoss } from './rl-loss';
import { RLPlan, RLPlanItem } from './rl-steps';
import { SftConversation, TokenSequence, buildSftSequence } from './sequences';
import { AUTO_SFT_BATCH_SIZE, RLTrainingConfig, SftTrainingConfig } from './training-config';

/** Metrics of one gradient step: numbers only (the client calls float() on each). */
export type StepMetrics = Record<string, number>;
export type OnStep = (metrics: StepMetrics, step: number, numSteps: number) => void | Promise<void>;

export interface TrainerOptions {
  /** Default: the reference trainer's AdamW (betas 0.9/0.99, weight decay 0.1, max grad norm 0.1). */
  optimizer?: AdamWOptions;
  /** Seed of a fresh adapter's A matrices. */
  seed?: number;
  /** SFT: most tokens (rows x padded length) in one forward/backward; larger batches accumulate. Default 2048. */
  microBatchTokens?: number;
  /**
   * Most bytes a step keeps from its forward pass (projections' and attention's outputs, then
   * the lm_head's softmax) so that the backward does not compute them again (checkpointing.ts,
   * KEPT_PRODUCTS_BYTES: 1.5 GB by default). More memory, less recomputed: a 135M model's step
   * of 2,048 tokens keeps all of them in about 1.65 GB.
   */
  keptProductsBytes?: number;
}

export class TrainingAbortedError extends Error {
  constructor() {
    super('training was cancelled');
    this.name = 'AbortError';
  }
}

interface ForwardResult {
  /** [rows, T] log p(target) (differentiable). */
  logprobs: tf.Tensor2D;
  /** [rows, T] entropy of each position's distribution, when asked for. */
  entropy: tf.Tensor2D | null;
}

/**
 * LoRA fine-tuning of a loaded model: the base weights stay frozen (their backward pass is
 * the custom gradient of FrozenLinear), only the adapter's A and B matrices are trained, with
 * AdamW. The jobs' losses (SFT on conversations, RL on token sequences with their advantages)
 * over the training primitives: every gradient step is LoraTrainingClient.accumulate per
 * micro-batch, then applyGradients, the same operations a Tinker client's forward_backward and
 * optim_step are. One trainer owns the model's adapter hooks until dispose().
 */
export class LoraTrainer {
  /** The adapter, its accumulated gradients and AdamW: the primitives this trainer's steps run on. */
  readonly client: LoraTrainingClient;
  private readonly model: LlamaModel;
  private readonly microBatchTokens: number;

  constructor(
    readonly lm: LoadedModel,
    readonly spec: LoraSpec = DEFAULT_LORA_SPEC,
    init?: AdapterTensors,
    options: TrainerOptions = {},
  ) {
    this.model = lm.model;
    this.client = new LoraTrainingClient(lm, spec, init, {
      seed: options.seed,
      keptProductsBytes: options.keptProductsBytes,
      optimizer: { ...REFERENCE_ADAMW, ...options.optimizer },
      attached: true,
    });
    this.microBatchTokens = options.microBatchTokens ?? 2048;
  }

  get attachment(): LoraAttachment {
    return this.client.attachment;
  }

  get optimizer(): AdamW {
    return this.client.optimizer;
  }

  /** The current adapter in PEFT names and layouts, for writePeftAdapter. */
  exportAdapter(): Promise<AdapterTensors> {
    return this.client.exportAdapter();
  }

  dispose(): void {
    this.client.dispose();
    for (const { linear } of this.model.linears()) linear.disableBackward();
    this.model.lmHead.disableBackward();
  }

  // ---------------------------------------------------------------- SFT

  /** Gradient steps trainSft will make: one per batch. */
  planSft(conversations: SftConversation[], config: SftTrainingConfig): { numSequences: number; batchSize: number } {
    const batchSize = config.batchSize === 'auto' ? Math.min(AUTO_SFT_BATCH_SIZE, Math.max(1, conversations.length)) : config.batchSize;
    const numSequences = Math.ceil(conversations.length / batchSize);
    if (Array.isArray(config.learningRate) && config.learningRate.length < numSequences) {
      throw new Error(`learning_rate has ${config.learningRate.length} values for ${numSequences} batches`);
    }
    return { numSequences, batchSize };
  }

  /**
   * Cross-entropy on assistant tokens only, batch_size conversations per gradient step.
   * The loss of a batch is the mean over its trainable tokens.
   */
  async trainSft(conversations: SftConversation[], config: SftTrainingConfig, onStep?: OnStep, signal?: AbortSignal): Promise<StepMetrics[]> {
    const { numSequences, batchSize } = this.planSft(conversations, config);
    const sequences = conversations.map((c, i) => {
      try {
        return buildSftSequence(this.lm, c, config.assistantTurns);
      } catch (err) {
        throw new Error(`conversation ${i}: ${(err as Error).message}`);
      }
    });
    const all: StepMetrics[] = [];
    for (let step = 0; step < numSequences; step++) {
      if (signal?.aborted) throw new TrainingAbortedError();
      const start = performance.now();
      const batch = sequences.slice(step * batchSize, (step + 1) * batchSize);
      const learningRate = Array.isArray(config.learningRate) ? config.learningRate[step] : config.learningRate;
      const trainable = batch.reduce((s, q) => s + q.mask.slice(1).reduce((a, b) => a + b, 0), 0);
      const { loss, gradNorm } = await this.sftGradientStep(batch, trainable, learningRate);
      const seconds = (performance.now() - start) / 1000;
      const numTokens = batch.reduce((s, q) => s + q.tokens.length, 0);
      const metrics: StepMetrics = {
        loss,
        num_tokens: numTokens,
        num_trainable_tokens: trainable,
        tokens_per_second: numTokens / seconds,
        learning_rate: learningRate,
        grad_norm: gradNorm,
      };
      all.push(metrics);
      await onStep?.(metrics, step + 1, numSequences);
    }
    return all;
  }

  /**
   * One SFT gradient step on already tokenized sequences (benchmarks, custom data
   * pipelines); returns the loss and the gradient norm.
   */
  sftStepOnTokens(sequences: TokenSequence[], learningRate: number): Promise<{ loss: number; gradNorm: number }> {
    const trainable = sequences.reduce((s, q) => s + q.mask.slice(1).reduce((a, b) => a + b, 0), 0);
    return this.sftGradientStep(sequences, trainable, learningRate);
  }

  /**
   * One optimizer step of SFT on `batch`, in micro-batches of at most microBatchTokens
   * (rows x padded length): each micro-batch's cross-entropy is normalised by the trainable
   * tokens of the whole batch, so the summed gradients are those of the batch's mean loss.
   */
  private sftGradientStep(batch: TokenSequence[], trainable: number, learningRate: number): Promise<{ loss: number; gradNorm: number }> {
    const micro = microBatches(batch.map((q) => q.tokens.length), this.microBatchTokens);
    return this.gradientStep(
      learningRate,
      micro.map((rows) => {
        // The next-token positions of the rows, right-padded to the longest (nextTokenRows).
        const T = Math.max(...rows.map((i) => batch[i].tokens.length)) - 1;
        const mask = new Float32Array(rows.length * T);
        rows.forEach((i, r) => batch[i].mask.slice(1).forEach((m, t) => (mask[r * T + t] = m)));
        return {
          sequences: rows.map((i) => batch[i].tokens),
          withEntropy: false,
          scored: mask,
          // The mean cross-entropy of the batch's trainable tokens, linear in the log-probs.
          loss: { weights: mask.map((m) => -m / Math.max(trainable, 1)) },
        };
      }),
    );
  }

  /** Mean cross-entropy of the assistant tokens of `conversations` (no training). */
  async sftLoss(conversations: SftConversation[]): Promise<number> {
    let sum = 0;
    let count = 0;
    for (const c of conversations) {
      const q = buildSftSequence(this.lm, c);
      const lp = (await nextTokenLogprobValues(this.model, nextTokenRows([q.tokens]), HEAD_CHUNK)).logprobs;
      q.mask.slice(1).forEach((m, t) => {
        sum -= m * lp[t];
        count += m;
      });
    }
    return sum / Math.max(count, 1);
  }

  // ---------------------------------------------------------------- RL

  /**
   * One gradient step per step of the plan (rl-steps.ts: token sequences with their masks,
   * sampling logprobs and advantages), with the policy loss of rl-loss.ts. The KL penalty's
   * reference policy is options.referenceAdapter, or the base model without one.
   */
  async trainRl(
    plan: RLPlan,
    config: RLTrainingConfig,
    onStep?: OnStep,
    signal?: AbortSignal,
    options: { referenceAdapter?: { spec: LoraSpec; tensors: AdapterTensors } } = {},
  ): Promise<StepMetrics[]> {
    const chunk = config.logprobCalculationChunkSize;
    const rowsOf = (step: RLPlanItem[]) => step.map((i) => i.sequence.tokens);

    // Values computed before any update: the reference policy's and (precalculate_logprobs)
    // the current policy's log-probs for every step.
    const valuesOfSteps = async () => {
      const out: Float32Array[] = [];
      for (const s of plan.steps) out.push(await this.logprobValues(rowsOf(s), chunk));
      return out;
    };
    const refLogprobs = config.klPenaltyCoef > 0 ? await this.withPolicy(options.referenceAdapter ?? null, valuesOfSteps) : null;
    const precalculated = config.precalculateLogprobs ? await valuesOfSteps() : null;

    const all: StepMetrics[] = [];
    for (let k = 0; k < plan.steps.length; k++) {
      if (signal?.aborted) throw new TrainingAbortedError();
      const start = performance.now();
      const step = plan.steps[k];
      const T = Math.max(...step.map((i) => i.sequence.tokens.length)) - 1;
      const n = step.length * T;
      const sampling = new Float32Array(n).fill(NaN);
      const advantages = new Float32Array(n);
      const mask = new Float32Array(n);
      const weights = new Float32Array(n);
      // Weight 1 / (trainable tokens of the history), rescaled so the mean over trainable tokens is 1.
      const counts = step.map((i) => i.sequence.mask.slice(1).reduce((a, b) => a + b, 0));
      const total = counts.reduce((a, b) => a + b, 0);
      step.forEach((item, r) => {
        const { mask: m, logprobs } = item.sequence;
        for (let t = 0; t + 1 < m.length; t++) {
          const at = r * T + t;
          mask[at] = m[t + 1];
          if (!m[t + 1]) continue;
          advantages[at] = item.advantage;
          weights[at] = (1 / counts[r]) * (total / step.length);
          sampling[at] = logprobs[t + 1] ?? NaN;
        }
      });
      const old = precalculated ? precalculated[k] : sampling;
      const loss: NextTokenLoss = (logprobs, seen) =>
        rlPolicyLoss(
          {
            logprobs,
            seen: seen.logprobs,
            oldLogprobs: old,
            advantages,
            mask,
            weights,
            refLogprobs: refLogprobs ? refLogprobs[k] : null,
            originalLogprobs: precalculated ? sampling : null,
            entropy: seen.entropy,
          },
          config,
        );
      const { loss: value, metrics, gradNorm } = await this.gradientStep(plan.learningRate, [{ sequences: rowsOf(step), withEntropy: true, chunk, loss, scored: mask }]);
      const seconds = (performance.now() - start) / 1000;
      const numTokens = step.reduce((s, i) => s + i.sequence.tokens.length, 0);
      const stepMetrics: StepMetrics = {
        loss: value,
        policy_loss: value,
        ...metrics,
        grad_norm: gradNorm,
        learning_rate: plan.learningRate,
        num_tokens: numTokens,
        num_trainable_tokens: total,
        tokens_per_second: numTokens / seconds,
      };
      all.push(stepMetrics);
      await onStep?.(stepMetrics, k + 1, plan.steps.length);
    }
    return all;
  }

  // ---------------------------------------------------------------- shared

  /**
   * Rows (right-padded to equal length) through the model: log p(tokens[t+1] | tokens[..t])
   * as [rows, T-1], and optionally the policy entropy at each position. This is
   * the plain taped forward pass (every intermediate kept for the backward pass); training
   * steps use checkpointedGradients, which computes the same gradients in bounded memory.
   */
  forward(rows: number[][], chunk: number, withEntropy: boolean): ForwardResult {
    const batch = nextTokenRows(rows);
    const hidden = this.model.hidden(batch.inputs);
    const N = batch.rows * batch.length;
    const parts: tf.Tensor1D[] = [];
    const entropies: tf.Tensor1D[] = [];
    for (let start = 0; start < N; start += chunk) {
      const size = Math.min(chunk, N - start);
      const head = headLogprobs(this.model, tf.slice(hidden, [start, 0], [size, -1]), batch.targets.slice(start, start + size), withEntropy);
      parts.push(head.logprobs);
      if (head.entropy) entropies.push(head.entropy);
    }
    const asRows = (flat: tf.Tensor1D[]) => tf.reshape(flat.length === 1 ? flat[0] : tf.concat(flat), [batch.rows, batch.length]) as tf.Tensor2D;
    return { logprobs: asRows(parts), entropy: withEntropy ? asRows(entropies) : null };
  }

  /** Log-probs [rows * (T-1)] of the current policy, as numbers (no gradient). */
  private async logprobValues(rows: number[][], chunk: number): Promise<Float32Array> {
    return (await nextTokenLogprobValues(this.model, nextTokenRows(rows), chunk)).logprobs;
  }

  /** Runs fn with the model under another policy: `adapter`, or the base model when null. */
  private async withPolicy<T>(adapter: { spec: LoraSpec; tensors: AdapterTensors } | null, fn: () => Promise<T>): Promise<T> {
    this.attachment.detach();
    const other = adapter ? LoraAttachment.attach(this.model, adapter.spec, adapter.tensors) : null;
    try {
      return await fn();
    } finally {
      other?.dispose();
      this.attachment.reattach();
    }
  }

  /**
   * One optimizer step on the gradients of the micro-batches' losses, summed (each loss, and each
   * of its metrics, is already normalised by the whole batch). Returns the summed loss and
   * metrics and the gradient norm.
   */
  private async gradientStep(learningRate: number, micro: MicroBatch[]): Promise<{ loss: number; metrics: StepMetrics; gradNorm: number }> {
    let loss = 0;
    const metrics: StepMetrics = {};
    try {
      for (const batch of micro) {
        const rows = nextTokenRows(batch.sequences);
        const options = { chunk: batch.chunk ?? HEAD_CHUNK, withEntropy: batch.withEntropy, scored: batch.scored };
        const result = typeof batch.loss === 'function' ? await this.client.accumulate(rows, batch.loss, options) : await this.client.accumulateWeighted(rows, batch.loss, options);
        loss += result.value;
        for (const [name, value] of Object.entries(result.metrics)) metrics[name] = (metrics[name] ?? 0) + value;
      }
    } catch (err) {
      this.client.discardGradients();
      throw err;
    }
    return { loss, metrics, gradNorm: await this.client.applyGradients(learningRate) };
  }
}

/** Positions per lm_head chunk where the config does not say (capped by vocabulary size in checkpointing). */
const HEAD_CHUNK = 1024;

/** Token rows whose loss is computed in one pass, and that loss. */
interface MicroBatch {
  sequences: number[][];
  loss: NextTokenLoss | WeightedLogprobs;
  withEntropy: boolean;
  /** Positions per lm_head chunk; default HEAD_CHUNK. */
  chunk?: number;
  /** The positions the loss reads (nonzero), [rows * T]: checkpointedGradients runs the lm_head only there. */
  scored?: Float32Array;
}
