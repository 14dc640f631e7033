/**
 * A prompt's attention for one layer, SmolLM2-135M's grouping (3 KV heads x 3 query heads,
 * head_dim 64), one sequence of T new tokens with a causal mask: the WebAssembly kernel
 * (src/kernels/prompt-attention.ts) against the tfjs ops that compute it under a gradient
 * tape (model/attention.ts, attendWithOps: per KV head two 2-D matMuls, the mask, a softmax,
 * and the transposes between token-major and heads-first), on the wasm backend; and the kernel
 * divided between THREADS matmul threads (src/kernels/matmul-threads.ts, runPromptAttention),
 * as it runs in a process that started them (an inference worker's MATMUL_THREADS).
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/prompt-attention.bench.ts   (ROUNDS=9 THREADS=2)
 *
 * The three take turns, CALLS calls each per round (the threads started before their turn and
 * stopped after it, a call made untimed first); figures are medians over the rounds. Prints
 * one markdown table row per prompt length T.
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { startMatMulThreads, stopMatMulThreads } from '../src/kernels/matmul';
import { promptAttention } from '../src/kernels/prompt-attention';
import { attendWithOps } from '../src/model/attention';
import { MASKED } from '../src/model/kv-cache';

const KV = 3;
const G = 3;
const D = 64;
const ROUNDS = Number(process.env['ROUNDS'] ?? 9);
const THREADS = Number(process.env['THREADS'] ?? 2);

function msPerCall(run: () => tf.Tensor, calls: number): number {
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) run().dispose();
  return (performance.now() - t0) / calls;
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[values.length >> 1];
}

async function main(): Promise<void> {
  await selectBackend('wasm');
  console.log(`| prompt length T | tfjs ops | kernel | speed-up | kernel on ${THREADS} threads | threads' speed-up |\n|---|---|---|---|---|---|`);
  for (const T of [32, 128, 256, 512]) {
    const calls = Math.max(2, Math.round(4096 / T));
    const q = tf.randomNormal([T, KV * G * D]) as tf.Tensor2D;
    const k = tf.randomNormal([1, KV, T, D]) as tf.Tensor4D;
    const v = tf.randomNormal([1, KV, T, D]) as tf.Tensor4D;
    const causal = new Float32Array(T * T);
    for (let i = 0; i < T; i++) causal.fill(MASKED, i * T + i + 1, (i + 1) * T);
    const mask = tf.tensor4d(causal, [1, 1, T, T]);
    const dims = { B: 1, H: KV * G, T };
    const ops = () => tf.tidy(() => attendWithOps(q, k, v, mask, dims));
    const kernel = () => promptAttention(q, k, v, mask, T) as tf.Tensor;
    ops().dispose();
    kernel().dispose();
    const times: [number[], number[], number[]] = [[], [], []];
    for (let round = 0; round < ROUNDS; round++) {
      times[0].push(msPerCall(ops, calls));
      times[1].push(msPerCall(kernel, calls));
      startMatMulThreads(THREADS);
      kernel().dispose();
      times[2].push(msPerCall(kernel, calls));
      await stopMatMulThreads();
    }
    const [a, b, c] = times.map(median);
    console.log(`| ${T} | ${a.toFixed(3)} ms | ${b.toFixed(3)} ms | ${(a / b).toFixed(1)}x | ${c.toFixed(3)} ms | ${(b / c).toFixed(2)}x |`);
    tf.dispose([q, k, v, mask]);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
