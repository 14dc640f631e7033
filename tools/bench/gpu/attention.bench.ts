/**
 * Prompt attention's training programs on webgpu alone (kernels/prompt-attention.webgpu.ts): the
 * forward that saves each query's statistics, and the backward from them (dq, dk/dv and, with
 * grouped queries, their sum over a KV head's query heads), over a training step's causal rows,
 * for the heads of the GPU bench's shapes. Each pass is timed from its first dispatch to the
 * queue's work done, medians over the runs after one untimed run; GFLOP/s counts the products
 * the pass makes over the visible (causal) half of the scores: 2 of T x T x D a head forward
 * (q k^T, P v), 7 backward (dq's q k^T, dO v^T and dS k; dk/dv's q k^T, dO v^T, dS^T q and
 * P^T dO). On lavapipe the times are a CPU's, for comparing the programs between GPU draws.
 *
 *   npx tsx tools/bench/gpu/attention.bench.ts [--rows 4] [--tokens 256] [--runs 5] [--memory BYTES]
 *
 * `--memory` sizes the programs' tiles to that much workgroup memory (capWorkgroupMemory)
 * rather than the device's.
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../../../libs/engine/src/backend';
import { promptAttentionGradient, promptAttentionSaving } from '../../../libs/engine/src/kernels/prompt-attention';
import { capWorkgroupMemory, workgroupMemoryLimit } from '../../../libs/engine/src/kernels/webgpu-program';
import { MASKED } from '../../../libs/engine/src/model/kv-cache';
import { Flushing, median, option, timed } from './bench-steps';

/** A model's attention heads: query heads, KV heads, head size. */
const SHAPES = [
  { name: 'smollm2-135m', H: 9, KV: 3, D: 64 },
  { name: 'qwen2.5-0.5b', H: 14, KV: 2, D: 64 },
  { name: 'qwen2.5-1.5b', H: 12, KV: 2, D: 128 },
  { name: 'qwen2.5-3b', H: 16, KV: 2, D: 128 },
  { name: 'gemma-3-270m', H: 4, KV: 1, D: 256 },
];

async function main(): Promise<void> {
  const B = Number(option('--rows', '4'));
  const T = Number(option('--tokens', '256'));
  const runs = Number(option('--runs', '5'));
  const memory = option('--memory', '');
  const info = await selectBackend('webgpu');
  if (info.name !== 'webgpu') throw new Error(`webgpu is not available here (got ${info.name})`);
  const backend = tf.backend() as unknown as Flushing;
  if (memory) capWorkgroupMemory(Number(memory));
  const maskValues = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) maskValues[i * T + j] = MASKED;
  const mask = tf.tensor4d(maskValues, [1, 1, T, T]);
  console.log(`${B} rows of ${T} tokens, causal; the tiles in ${workgroupMemoryLimit()} bytes of workgroup memory; medians of ${runs} runs`);
  console.log('| heads (query / KV x size) | forward ms | backward ms | forward GFLOP/s | backward GFLOP/s |');
  console.log('|---|---|---|---|---|');
  for (const { name, H, KV, D } of SHAPES) {
    const q = tf.randomNormal([B * T, H * D], 0, 0.3) as tf.Tensor2D;
    const k = tf.randomNormal([B, KV, T, D], 0, 0.3) as tf.Tensor4D;
    const v = tf.randomNormal([B, KV, T, D]) as tf.Tensor4D;
    const dO = tf.randomNormal([B * T, H * D]) as tf.Tensor2D;
    const forward: number[] = [];
    const backward: number[] = [];
    for (let r = 0; r <= runs; r++) {
      let saved: { out: tf.Tensor2D; stats: tf.Tensor2D } | null = null;
      let grads: tf.Tensor[] | null = null;
      const f = await timed(backend, () => (saved = promptAttentionSaving(q, k, v, mask, T)));
      if (!saved) throw new Error(`the attention programs take no heads of ${D}`);
      const { out, stats } = saved;
      const b = await timed(backend, () => (grads = promptAttentionGradient(q, k, v, mask, dO, T, stats)));
      tf.dispose([out, stats, ...(grads ?? [])]);
      if (r > 0) {
        forward.push(f);
        backward.push(b);
      }
    }
    // A product of T x T x D over the causal half of the scores, 2 FLOPs a multiply-add.
    const product = (B * H * T * (T + 1) * D) / 1e9;
    const [fMs, bMs] = [median(forward), median(backward)];
    console.log(`| ${name}: ${H} / ${KV} x ${D} | ${fMs.toFixed(2)} | ${bMs.toFixed(2)} | ${((2 * product) / (fMs / 1e3)).toFixed(1)} | ${((7 * product) / (bMs / 1e3)).toFixed(1)} |`);
    tf.dispose([q, k, v, dO]);
  }
  mask.dispose();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
