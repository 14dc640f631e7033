/**
 * The host's time to hand a LoRA SFT step of 4 rows of 256 tokens its embeddings on webgpu, in
 * each GPU bench shape's width and vocabulary (tied, bf16): copied from the host's table
 * (EmbeddingTable.rows, each value widened to f32, then uploaded) against read on the GPU from
 * the lm_head's weight (kernels/embedding-rows.webgpu.ts: the ids uploaded and one dispatch
 * recorded). On Dawn's null backend, which validates and records every WebGPU call and runs
 * none, so each figure is the host's alone. The null device holds at most 512 MB, so the GPU's
 * copy of the weight has 8,192 columns, whatever the vocabulary (the host's work of the
 * dispatch does not depend on it); the host's table has the whole vocabulary, the ids spread
 * over it. Medians of ROUNDS (9), after one untimed call.
 *
 *   node tools/bench/built.mjs libs/engine/bench/embedding-rows.bench.ts
 */
import * as tf from '@tensorflow/tfjs-core';
import * as os from 'node:os';
import { selectBackend } from '../src/backend';
import { halfPairs } from '../src/dtype';
import { embeddingRowsOnGpu } from '../src/kernels/embedding-rows.webgpu';
import { EmbeddingTable } from '../src/model/embedding';
import { installNavigatorGpu } from '../src/webgpu';
import { setBufferPoolBytes } from '../src/webgpu-buffer-pool';

const SHAPES: [string, number, number][] = [
  ['SmolLM2-135M', 576, 49152],
  ['Qwen2.5-0.5B', 896, 151936],
  ['Qwen2.5-1.5B', 1536, 151936],
  ['Qwen2.5-3B', 2048, 151936],
];
const TOKENS = 4 * 256;
const GPU_COLUMNS = 8192;
const ROUNDS = Number(process.env['ROUNDS'] ?? 9);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

interface Uploading {
  uploadToGPU(dataId: object): void;
}

/** Milliseconds of `make()` and its upload, the tensor disposed after the clock stops; the median of ROUNDS after one untimed call. */
function timed(make: () => tf.Tensor): number {
  const backend = tf.backend() as unknown as Uploading;
  const times: number[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    const t0 = performance.now();
    const t = make();
    backend.uploadToGPU(t.dataId);
    const ms = performance.now() - t0;
    t.dispose();
    if (round > 0) times.push(ms);
  }
  return median(times);
}

async function main(): Promise<void> {
  installNavigatorGpu(['backend=null']);
  // Freed buffers of one shape's sizes must not hold the null device's memory from the next's.
  setBufferPoolBytes(64 * 2 ** 20);
  const info = await selectBackend('webgpu');
  if (info.name !== 'webgpu') throw new Error(`no webgpu backend: ${info.notes?.join('; ')}`);
  console.log(`Embeddings of ${TOKENS} tokens (4 rows of 256), tied bf16; webgpu on Dawn's null backend; node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}; medians of ${ROUNDS}`);
  console.log('| shape (hidden, vocabulary) | MB of f32 rows | copied from the host, ms | read on the GPU, ms |');
  console.log('|---|---|---|---|');
  for (const [name, C, V] of SHAPES) {
    // Random bf16-exact values; only their layout matters to the host's copy.
    const values = new Float32Array(V * C);
    for (let i = 0; i < values.length; i += 61) values[i] = ((i % 251) - 125) / 128;
    const table = EmbeddingTable.of(values, C, 'BF16');
    const ids = Array.from({ length: TOKENS }, (_, i) => (i * 7919) % V);
    const weight = { pairs: tf.tensor2d(halfPairs(new Float32Array(C * GPU_COLUMNS), 'BF16'), [C, GPU_COLUMNS / 2], 'int32'), dtype: 'BF16' as const };
    const gpuIds = ids.map((id) => id % GPU_COLUMNS);
    const copied = timed(() => tf.tensor2d(table.rows(ids), [TOKENS, C]));
    const read = timed(() => embeddingRowsOnGpu(gpuIds, weight, true, 1));
    weight.pairs.dispose();
    console.log(`| ${name} (${C}, ${V}) | ${((TOKENS * C * 4) / 2 ** 20).toFixed(1)} | ${copied.toFixed(2)} | ${read.toFixed(3)} |`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
