import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { DecodeBatch } from '../../../libs/engine/src/decode-batch';
import { wrapMethod } from '../../../libs/engine/src/kernels/gpu-counters';
import type { RowDraw } from '../../../libs/engine/src/kernels/sample';
import type { LoadedModel } from '../../../libs/engine/src/loader';
import { DEFAULT_LORA_SPEC } from '../../../libs/engine/src/lora/peft';
import type { RLPlan, RLPlanItem } from '../../../libs/engine/src/training/rl-steps';
import { LoraTrainer } from '../../../libs/engine/src/training/trainer';
import { validateExperimentalConfig } from '../../../libs/art/src/experimental-config';

/** The value given after `name` on the command line, else `fallback`. */
export function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

/** A full garbage collection, without node's --expose-gc on the command line. */
export const collectGarbage = (() => {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
})();

/** Wraps `owner[method]` (a WebGPU call: gpuPrototype) so that each call's milliseconds go to `spent`; returns what unwraps it. */
export function timeCalls(owner: object, method: string, spent: (ms: number) => void): () => void {
  return wrapMethod(owner, method, (call) => {
    const t0 = performance.now();
    try {
      return call();
    } finally {
      spent(performance.now() - t0);
    }
  });
}

/** One kind of step a bench repeats, and what frees what it holds. */
export interface BenchStep {
  step: () => Promise<unknown>;
  dispose: () => void;
}

/**
 * Greedy decoding steps of a batch of `rows` rows, each joined with a 4-token prompt; with
 * `runSteps`, each call a run of that many steps fed on the GPU (DecodeBatch.stepsDrawn).
 */
export async function decodeStep(lm: LoadedModel, rows = 1, runSteps = 1): Promise<BenchStep> {
  const batch = new DecodeBatch<number>(lm.model);
  const next = new Map<number, number>();
  for (let r = 0; r < rows; r++) {
    await batch.join(r, [1 + r, 2, 3, 4]);
    next.set(r, 5);
  }
  const greedy = new Map<number, RowDraw>(Array.from({ length: rows }, (_, r) => [r, { temperature: 0, u: 0 }]));
  const run = Array.from({ length: runSteps }, () => greedy);
  return { step: () => batch.stepsDrawn(next, run), dispose: () => batch.dispose() };
}

/** A prompt of `tokens` made-up token ids. */
const benchPrompt = (tokens: number) => Array.from({ length: tokens }, (_, i) => 5 + ((i * 7) % 1000));

/** A prompt of `promptTokens` tokens prefilled as the service does it: joining a batch of its own, which is then dropped. */
export function prefillStep(lm: LoadedModel, promptTokens: number): BenchStep {
  const prompt = benchPrompt(promptTokens);
  const step = async () => {
    const batch = new DecodeBatch<number>(lm.model);
    await batch.join(0, prompt);
    batch.dispose();
  };
  return { step, dispose: () => undefined };
}

/**
 * A request's life in a busy batch, again and again: a row joins a batch of `rows` others with
 * a prompt of `promptTokens` tokens (prefilled alone), the batch takes one greedy step, and the
 * row leaves. Its row stays for the next row to join in (written into the batch's cache where
 * it is, KVCache.replaceRow); with `after`, a second step drops it first, so that each row
 * joins after the others, its cache merged into new tensors of the batch's.
 */
export async function joinStep(lm: LoadedModel, rows: number, promptTokens: number, after = false): Promise<BenchStep> {
  const batch = new DecodeBatch<number>(lm.model);
  const prompt = benchPrompt(promptTokens);
  for (let r = 0; r < rows; r++) await batch.join(r, [1 + r, 2, 3, 4]);
  let id = rows;
  const greedy = () => batch.stepDrawn(new Map(batch.ids.map((m) => [m, 5])), new Map(batch.ids.map((m) => [m, { temperature: 0, u: 0 }])));
  const step = async () => {
    const joining = id++;
    await batch.join(joining, prompt);
    await greedy();
    batch.leave(joining);
    if (after) await greedy();
  };
  return { step, dispose: () => batch.dispose() };
}

/** `rows` sequences of `tokens` tokens (or of each of `lengths`), the first 2 of each without loss. */
function trainingRows(rows: number, tokens: number, lengths: number[] = new Array<number>(rows).fill(tokens)): { tokens: number[]; mask: number[] }[] {
  return lengths.map((length, r) => {
    const ids = Array.from({ length }, (_, i) => 5 + ((i * 7 + r * 13) % 1000));
    return { tokens: ids, mask: ids.map((_, i) => (i < 2 ? 0 : 1)) };
  });
}

/** A LoRA trainer on DEFAULT_LORA_SPEC whose micro-batch holds `rows` x `tokens` tokens. */
function benchTrainer(lm: LoadedModel, rows: number, tokens: number): LoraTrainer {
  return new LoraTrainer(lm, DEFAULT_LORA_SPEC, undefined, { seed: 1, microBatchTokens: rows * tokens });
}

/** LoRA SFT steps on `rows` sequences of `tokens` tokens in one micro-batch. */
export function sftStep(lm: LoadedModel, rows: number, tokens: number): BenchStep {
  const trainer = benchTrainer(lm, rows, tokens);
  const sequences = trainingRows(rows, tokens);
  return { step: () => trainer.sftStepOnTokens(sequences, 1e-4), dispose: () => trainer.dispose() };
}

/** ART's RL loss as validateExperimentalConfig sets it by default: importance sampling against the sampled logprobs. */
export const ART_RL_DEFAULTS = validateExperimentalConfig({}).config.settings;

/** One RL step of `rows`, half with advantage 1 and half -1, their sampled tokens' logprobs -2. */
export function rlPlanOf(rows: { tokens: number[]; mask: number[] }[]): RLPlan {
  const items: RLPlanItem[] = rows.map(({ tokens, mask }, r) => ({
    sequence: { tokens, mask, logprobs: mask.map((m) => (m ? -2 : NaN)) },
    advantage: r % 2 === 0 ? 1 : -1,
  }));
  return { steps: [items], learningRate: 1e-5 };
}

/**
 * LoRA SFT steps on `rows` sequences of new lengths each step, from `tokens` / 2 to `tokens`
 * (seeded), as real batches come: the step's activations take buffers of new sizes.
 */
export function sftVariedStep(lm: LoadedModel, rows: number, tokens: number): BenchStep {
  const trainer = benchTrainer(lm, rows, tokens);
  let seed = 1;
  const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  const lengths = () => Array.from({ length: rows }, () => Math.ceil(tokens / 2 + (next() * tokens) / 2));
  return { step: () => trainer.sftStepOnTokens(trainingRows(rows, tokens, lengths()), 1e-4), dispose: () => trainer.dispose() };
}

/** Steps of ART's default RL loss (ART_RL_DEFAULTS) on the same rows (rlPlanOf). */
export function rlStep(lm: LoadedModel, rows: number, tokens: number): BenchStep {
  const trainer = benchTrainer(lm, rows, tokens);
  const plan = rlPlanOf(trainingRows(rows, tokens));
  return { step: () => trainer.trainRl(plan, ART_RL_DEFAULTS), dispose: () => trainer.dispose() };
}

/** The median of `values`. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** What the webgpu backend offers to flush its recorded work and reach its device. */
export interface Flushing {
  endComputePassEncoder(): void;
  submitQueue(): void;
  device: GPUDevice;
}

/** Milliseconds from `run`'s first dispatch to the queue's work done. */
export async function timed(backend: Flushing, run: () => void): Promise<number> {
  await backend.device.queue.onSubmittedWorkDone();
  const t0 = performance.now();
  run();
  backend.endComputePassEncoder();
  backend.submitQueue();
  await backend.device.queue.onSubmittedWorkDone();
  return performance.now() - t0;
}
