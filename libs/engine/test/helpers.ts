import * as fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { BackendName, selectBackend } from '../src/backend';
import { DecodeBatch } from '../src/decode-batch';
import { GenerationParams, GenerationStep, SequenceGenerator } from '../src/generate';
import type { LoadedModel } from '../src/loader';
import { MakeModelOptions, makeModel } from '../src/maker/make-model';
import type { LoraLayer } from '../src/lora/lora-layer';
import { argmax, type SampledToken } from '../src/sampling';
import { logSoftmax } from './qwen3-reference';

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `engine-${prefix}-`));
}

export function makeTiny(prefix: string, options: Partial<MakeModelOptions> = {}): string {
  const out = tempDir(prefix);
  makeModel({ preset: 'tiny', out, seed: 7, ...options });
  return out;
}

export async function useBackend(name: BackendName): Promise<void> {
  const info = await selectBackend(name);
  if (info.name !== name) throw new Error(`wanted ${name}, got ${info.name}`);
  tf.engine().startScope();
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Rows of a [rows, cols] tensor as Float32Arrays. */
export function rowsOf(t: tf.Tensor2D): Float32Array[] {
  const [rows, cols] = t.shape;
  const data = t.dataSync() as Float32Array;
  return Array.from({ length: rows }, (_, r) => data.slice(r * cols, (r + 1) * cols));
}

/**
 * Why webgpu cannot run here, or null when a WebGPU adapter answers. Asked in a child process
 * so that a test file can decide synchronously whether to run its webgpu suite.
 */
export function webgpuUnavailable(): string | null {
  const script = `
    const path = require('node:path');
    const root = path.dirname(require.resolve('webgpu/package.json'));
    const { create } = require(path.join(root, 'dist', process.platform + '-' + process.arch, 'dawn.node'));
    create([]).requestAdapter().then((a) => process.stdout.write(a ? 'ok' : 'no adapter'), (e) => process.stdout.write(String(e)));
  `;
  const probe = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', cwd: __dirname, timeout: 30_000 });
  if (probe.stdout === 'ok') return null;
  // Dawn says why on stderr, e.g. "Warning: Couldn't load Vulkan: libvulkan.so.1: cannot open ...".
  const why = probe.stderr.split('\n').find((line) => /^(Warning|Error)/.test(line) && !line.includes('artificially reduced'));
  return [probe.stdout || 'the probe failed', why].filter(Boolean).join(': ');
}

/**
 * A logits processor that leaves the even token ids alone, with its quick check: a stand-in for
 * a grammar's. From `refusesFrom` generated tokens on, the quick check refuses every token, as a
 * grammar's does near the end of its budget, and says so beforehand (quickCheckApplies) unless
 * `tells` is false.
 */
export function evenTokensOnly(refusesFrom = Infinity, tells = true): Pick<GenerationParams, 'logitsProcessor' | 'quickCheck' | 'quickCheckApplies'> {
  const applies = (generated: readonly number[]) => generated.length < refusesFrom;
  return {
    logitsProcessor: (logits) => logits.forEach((_, i) => i % 2 === 1 && (logits[i] = -Infinity)),
    quickCheck: (id, generated) => applies(generated) && id % 2 === 0,
    ...(tells ? { quickCheckApplies: applies } : {}),
  };
}

/**
 * How decodeTokens takes each step's tokens: `sampled` by each generator from its logits
 * (DecodeBatch.step); `drawn` from the generators' draws (DecodeBatch.stepDrawn, what the
 * inference worker does on webgpu); `runs` the same three steps at a time (stepsDrawn); `mixed`
 * drawn where a generator can be, drawn and then checked where its logits processor has a quick
 * check (its logits read back where the check refuses the token: lastLogits), the others
 * sampled from their logits (stepMixed).
 */
export type DecodeMode = 'sampled' | 'drawn' | 'runs' | 'mixed';

/** Decodes prompts together with SequenceGenerators and returns each one's tokens, each step's taken as `mode` says. */
export async function decodeTokens(lm: LoadedModel, prompts: number[][], params: GenerationParams[], mode: DecodeMode): Promise<SampledToken[][]> {
  const batch = new DecodeBatch<number>(lm.model);
  const generators = prompts.map((_, i) => new SequenceGenerator(lm.tokenizer, params[i], lm.eosTokenIds));
  try {
    const pending = new Map<number, number>();
    const take = (i: number, step: GenerationStep) => {
      if (step.finished) batch.leave(i);
      else pending.set(i, step.token.id);
    };
    for (const [i, prompt] of prompts.entries()) take(i, generators[i].next(await batch.join(i, prompt)));
    while (pending.size > 0) {
      const next = new Map(pending);
      pending.clear();
      const members = [...next.keys()];
      if (mode === 'sampled') {
        for (const [i, logits] of await batch.step(next)) take(i, generators[i].next(logits));
      } else if (mode === 'mixed') {
        const draws = new Map(members.filter((i) => generators[i].drawsWithoutLogits || generators[i].drawsThenChecks).map((i) => [i, generators[i].draw()]));
        const refused: number[] = [];
        for (const [i, value] of await batch.stepMixed(next, draws)) {
          if (value instanceof Float32Array) take(i, generators[i].next(value));
          else if (!generators[i].drawsThenChecks) take(i, generators[i].accept(value));
          else {
            const step = generators[i].acceptChecked(value);
            if (step) take(i, step);
            else refused.push(i);
          }
        }
        // The rows whose processor refused the drawn token: their logits after all.
        if (refused.length > 0) for (const [i, logits] of await batch.lastLogits(refused)) take(i, generators[i].nextRefused(logits));
      } else {
        const draws = Array.from({ length: mode === 'runs' ? 3 : 1 }, () => new Map(members.map((i) => [i, generators[i].draw()])));
        // A sequence that ended within a run drops the tokens drawn for it after its end.
        for (const step of await batch.stepsDrawn(next, draws)) for (const [i, token] of step) if (!generators[i].done) take(i, generators[i].accept(token));
      }
    }
  } finally {
    batch.dispose();
  }
  return generators.map((g) => g.tokens);
}

/**
 * For the adapter factors of `target` in `layers`, the element with the largest gradient
 * (`gradient` of a variable's name) against its central difference of `loss` (step 1e-2, the
 * variable restored after): what a test of hand-written gradients compares.
 */
export function largestGradientAgainstDifference(layers: readonly LoraLayer[], target: string, gradient: (name: string) => tf.Tensor, loss: () => number): { analytic: number; numeric: number } {
  let variable: tf.Variable | null = null;
  let index = -1;
  let analytic = 0;
  for (const layer of layers.filter((l) => l.target === target)) {
    for (const factor of [layer.aT, layer.bT] as tf.Variable[]) {
      gradient(factor.name)
        .dataSync()
        .forEach((x, i) => {
          if (Math.abs(x) > Math.abs(analytic)) [variable, index, analytic] = [factor, i, x];
        });
    }
  }
  if (!variable) throw new Error(`no adapter factor of ${target}`);
  const v: tf.Variable = variable;
  const data = v.dataSync().slice();
  const at = (delta: number) => {
    const moved = data.slice();
    moved[index] += delta;
    v.assign(tf.tensor(moved, v.shape));
    return loss();
  };
  const eps = 1e-2;
  const numeric = (at(eps) - at(-eps)) / (2 * eps);
  v.assign(tf.tensor(data, v.shape));
  return { analytic, numeric };
}

/** A greedy continuation: each chosen token and its logprob, and the logits of the prompt's positions. */
export interface GreedyRun {
  promptRows: ArrayLike<number>[];
  tokens: number[];
  logprobs: number[];
}

/** The engine's greedy continuation of `prompt` by `steps` tokens: the prompt in one pass, then one token at a time with the KV cache. */
export function engineGreedy(lm: LoadedModel, prompt: number[], steps: number): GreedyRun {
  const cache = lm.model.newCache();
  cache.addEmptyRow();
  const promptLogits = lm.model.forward([prompt], { cache });
  const promptRows = rowsOf(promptLogits);
  promptLogits.dispose();
  const run: GreedyRun = { promptRows, tokens: [], logprobs: [] };
  let last: ArrayLike<number> = promptRows[promptRows.length - 1];
  for (let i = 0; i < steps; i++) {
    const token = pushGreedy(run, last);
    const step = lm.model.forward([[token]], { cache });
    last = rowsOf(step)[0];
    step.dispose();
  }
  cache.dispose();
  return run;
}

/** A reference's greedy continuation, every position recomputed from scratch by `forward` (logits a position). */
export function referenceGreedy(forward: (tokens: number[]) => ArrayLike<number>[], prompt: number[], steps: number): GreedyRun {
  const promptRows = forward(prompt);
  const run: GreedyRun = { promptRows, tokens: [], logprobs: [] };
  let last = promptRows[promptRows.length - 1];
  for (let i = 0; i < steps; i++) {
    pushGreedy(run, last);
    const all = forward([...prompt, ...run.tokens]);
    last = all[all.length - 1];
  }
  return run;
}

function pushGreedy(run: GreedyRun, logits: ArrayLike<number>): number {
  const lp = logSoftmax(logits);
  const token = argmax(lp);
  run.tokens.push(token);
  run.logprobs.push(lp[token]);
  return token;
}
