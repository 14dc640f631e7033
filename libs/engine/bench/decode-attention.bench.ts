/**
 * Decode attention for one layer, SmolLM2-135M's grouping (B sequences x 3 KV heads x 3
 * query heads, head_dim 64): the WebAssembly kernel (src/kernels/decode-attention.ts) against
 * the tfjs ops it replaced (batched matMuls, mask, softmax), on the wasm backend.
 *
 *   npx tsx libs/engine/bench/decode-attention.bench.ts
 *
 * Prints one markdown table row per cached length S.
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { decodeAttention } from '../src/kernels/decode-attention';

const B = 8;
const KV = 3;
const G = 3;
const D = 64;
const CALLS = 300;

function tfjsOps(q: tf.Tensor3D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D): tf.Tensor3D {
  const S = k.shape[2];
  return tf.tidy(() => {
    const scores = tf.matMul(q, tf.reshape(k, [B * KV, S, D]), false, true);
    const probs = tf.softmax(tf.add(tf.reshape(scores, [B, KV * G, 1, S]), mask));
    return tf.matMul(tf.reshape(probs, [B * KV, G, S]), tf.reshape(v, [B * KV, S, D]));
  });
}

function msPerCall(run: () => tf.Tensor): number {
  for (let i = 0; i < 20; i++) run().dispose();
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) run().dispose();
  return (performance.now() - t0) / CALLS;
}

async function main(): Promise<void> {
  await selectBackend('wasm');
  console.log(`| cached length S | tfjs ops | kernel | speed-up |\n|---|---|---|---|`);
  for (const S of [64, 128, 256, 512]) {
    const q = tf.randomNormal([B * KV, G, D]) as tf.Tensor3D;
    const k = tf.randomNormal([B, KV, S, D]) as tf.Tensor4D;
    const v = tf.randomNormal([B, KV, S, D]) as tf.Tensor4D;
    const mask = tf.zeros([B, 1, 1, S]) as tf.Tensor4D;
    const ops = msPerCall(() => tfjsOps(q, k, v, mask));
    const kernel = msPerCall(() => decodeAttention(q, k, v, mask) as tf.Tensor3D);
    console.log(`| ${S} | ${ops.toFixed(3)} ms | ${kernel.toFixed(3)} ms | ${(ops / kernel).toFixed(1)}x |`);
    tf.dispose([q, k, v, mask]);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
