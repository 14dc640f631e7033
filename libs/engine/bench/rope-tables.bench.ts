/**
 * The host's time to hand a pass its RoPE tables (Rope.tables: cos and sin for the q and k heads
 * of each position, [tokens, H + KV, D] each), for the positions of a LoRA SFT step of 4 rows
 * of 256 tokens in each GPU bench shape's heads: made (a Rope that has not made them before) and
 * kept (the same positions asked for again, as every step over rows of the same lengths does).
 * On the cpu backend, so the figure is the host's alone; on webgpu the upload of made tables
 * comes on top. Medians of ROUNDS (9).
 *
 *   node tools/bench/built.mjs libs/engine/bench/rope-tables.bench.ts
 */
import * as tf from '@tensorflow/tfjs-core';
import * as os from 'node:os';
import { selectBackend } from '../src/backend';
import type { ModelConfig } from '../src/config';
import { Rope } from '../src/model/rope';

const SHAPES: [string, number, number, number][] = [
  ['SmolLM2-135M: 9 / 3 x 64', 9, 3, 64],
  ['Qwen2.5-0.5B: 14 / 2 x 64', 14, 2, 64],
  ['Qwen2.5-1.5B: 12 / 2 x 128', 12, 2, 128],
  ['Qwen2.5-3B: 16 / 2 x 128', 16, 2, 128],
];
const ROWS = 4;
const TOKENS = 256;
const ROUNDS = Number(process.env['ROUNDS'] ?? 9);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Milliseconds of one call of `rope.tables(positions)`, its tensors disposed after the clock stops. */
function timed(rope: Rope, positions: number[]): number {
  const t0 = performance.now();
  const { cos, sin } = rope.tables(positions);
  const ms = performance.now() - t0;
  tf.dispose([cos, sin]);
  return ms;
}

async function main(): Promise<void> {
  await selectBackend('cpu');
  const positions = Array.from({ length: ROWS * TOKENS }, (_, i) => i % TOKENS);
  console.log(`RoPE tables of ${ROWS} rows of ${TOKENS} tokens; cpu backend; node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}; medians of ${ROUNDS}`);
  console.log('| heads (query / KV x size) | values a table | made, ms | kept, ms |');
  console.log('|---|---|---|---|');
  for (const [name, numHeads, numKvHeads, headDim] of SHAPES) {
    const config = { numHeads, numKvHeads, headDim, ropeTheta: 1e6, ropeScaling: null } as unknown as ModelConfig;
    const made: number[] = [];
    const kept: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const rope = new Rope(config);
      made.push(timed(rope, positions));
      kept.push(timed(rope, positions));
      rope.dispose();
    }
    const values = positions.length * (numHeads + numKvHeads) * headDim;
    console.log(`| ${name} | ${(values / 1e6).toFixed(2)} million | ${median(made).toFixed(2)} | ${median(kept).toFixed(3)} |`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
