/**
 * A prompt's attention for one layer, SmolLM2-135M's grouping (3 KV heads x 3 query heads,
 * head_dim 64), one sequence of T new tokens with a causal mask: the WebAssembly kernel
 * (src/kernels/prompt-attention.ts) against the tfjs ops that compute it under a gradient
 * tape (ops/attention.ts, attendWithOps: per KV head two 2-D matMuls, the mask, a softmax,
 * and the transposes between token-major and heads-first), on the wasm backend; and the kernel
 * divided between THREADS matmul threads (src/kernels/matmul-threads.ts, runPromptAttention),
 * as it runs in a process that started them (an inference worker's MATMUL_THREADS).
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/prompt-attention.bench.ts   (ROUNDS=9 THREADS=2)
 *
 * The three take turns, CALLS calls each per round (the threads started before their turn and
 * stopped after it, a call made untimed first); figures are medians over the rounds. Prints
 * one markdown table row per prompt length T. Then the gradient kernel alone
 * (promptAttentionGradient, a training step's backward pass through attention) for B sequences
 * of T tokens, on one thread and on THREADS threads (divided by KV heads), with its rate in
 * GFLOP/s counting the five products of D over the causal half of the query-key pairs (scores,
 * dP, dq, dk, dv).
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { startMatMulThreads, stopMatMulThreads } from '../src/kernels/matmul';
import { promptAttention, promptAttentionGradient } from '../src/kernels/prompt-attention';
import { attendWithOps } from '../src/ops/attention';
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
    const mask = causalMask(T);
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
  await gradientTable();
}

function causalMask(T: number): tf.Tensor4D {
  const causal = new Float32Array(T * T);
  for (let i = 0; i < T; i++) causal.fill(MASKED, i * T + i + 1, (i + 1) * T);
  return tf.tensor4d(causal, [1, 1, T, T]);
}

async function gradientTable(): Promise<void> {
  console.log(`\n| B x T | gradient kernel, one thread | GFLOP/s | on ${THREADS} threads | threads' speed-up |\n|---|---|---|---|---|`);
  for (const [B, T] of [[1, 64], [1, 256], [8, 256], [1, 1024]]) {
    const calls = Math.max(2, Math.round(8192 / (B * T)));
    const q = tf.randomNormal([B * T, KV * G * D]) as tf.Tensor2D;
    const dO = tf.randomNormal([B * T, KV * G * D]) as tf.Tensor2D;
    const k = tf.randomNormal([B, KV, T, D]) as tf.Tensor4D;
    const v = tf.randomNormal([B, KV, T, D]) as tf.Tensor4D;
    const mask = causalMask(T);
    const gradient = () => {
      const out = promptAttentionGradient(q, k, v, mask, dO, T);
      if (!out) throw new Error('the gradient kernel declined the bench shapes');
      tf.dispose(out.slice(1));
      return out[0];
    };
    gradient().dispose();
    const times: [number[], number[]] = [[], []];
    for (let round = 0; round < ROUNDS; round++) {
      times[0].push(msPerCall(gradient, calls));
      startMatMulThreads(THREADS);
      gradient().dispose();
      times[1].push(msPerCall(gradient, calls));
      await stopMatMulThreads();
    }
    const [a, b] = times.map(median);
    const flops = 2 * 5 * B * KV * G * D * ((T * (T + 1)) / 2);
    console.log(`| ${B} x ${T} | ${a.toFixed(3)} ms | ${(flops / a / 1e6).toFixed(1)} | ${b.toFixed(3)} ms | ${(a / b).toFixed(2)}x |`);
    tf.dispose([q, dO, k, v, mask]);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
