/**
 * LoRA training speed on a SmolLM2-135M-shaped model (random weights, f32):
 *
 *   npx tsx libs/engine/bench/train.bench.ts
 *
 * LoRA r 8, alpha 16 on all seven projections, one 64-token sequence per step: times full
 * steps (forward, backward, AdamW), wall and the process's CPU time (which moves less than
 * wall time on a machine shared with other jobs), then one packed step of 8 x 256 tokens, measures the machine's plain 2-D matMul peak on the same
 * backend, and rewrites its block of docs/benchmarks.md (the prose around it is kept). ENGINE_BACKEND picks the backend (default wasm);
 * MATMUL_THREADS the threads the frozen projections are divided between (default 1; 1 against
 * 2 in alternating processes: train-threads.bench.ts).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { BackendPreference, selectBackend } from '../src/backend';
import { loadModel } from '../src/loader';
import { DEFAULT_LORA_SPEC } from '../src/lora/peft';
import { makeModel } from '../src/maker/make-model';
import { LoraTrainer } from '../src/training/trainer';
import { trainingSequences } from './training-sequences';
import { writeDocBlock } from './doc-block';

const ROOT = path.resolve(__dirname, '../../..');
const MODEL_DIR = path.join(ROOT, 'var/models/bench-smollm2-135m');
const DOC = path.join(ROOT, 'docs/benchmarks.md');
const TOKENS = 64;
/** The first tokens of each short sequence, masked: the other 48 are trained on. */
const CONTEXT = 16;
const STEPS = 5;
const TARGET_SECONDS = 3;
const MATMUL_THREADS = Number(process.env['MATMUL_THREADS'] ?? 1);

let peakRss = 0;
const sampleRss = () => (peakRss = Math.max(peakRss, process.memoryUsage().rss));

/** Best GFLOP/s of plain 2-D matMuls of the shapes a training step runs. */
function matMulPeak(): number {
  let best = 0;
  for (const [m, k, n] of [
    [64, 576, 1536],
    [64, 576, 960],
    [256, 576, 1536],
    [512, 512, 512],
  ]) {
    const a = tf.randomNormal([m, k]);
    const b = tf.randomNormal([k, n]);
    tf.matMul(a, b).dispose(); // XNNPACK packs b on first use
    const reps = 20;
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) {
      const c = tf.matMul(a, b);
      c.dataSync();
      c.dispose();
    }
    const seconds = (performance.now() - t0) / 1000;
    best = Math.max(best, (2 * m * k * n * reps) / seconds / 1e9);
    a.dispose();
    b.dispose();
  }
  return best;
}

async function main(): Promise<void> {
  const backend = await selectBackend((process.env['ENGINE_BACKEND'] as BackendPreference | undefined) ?? 'wasm');
  if (!fs.existsSync(path.join(MODEL_DIR, 'model.safetensors'))) {
    console.log(`making ${MODEL_DIR}`);
    makeModel({ preset: 'smollm2-135m', out: MODEL_DIR, seed: 0 });
  }
  const lm = await loadModel(MODEL_DIR, { matmulThreads: MATMUL_THREADS });
  sampleRss();
  const peak = matMulPeak();
  console.log(`backend ${backend.name}; plain matMul peak ${peak.toFixed(1)} GFLOP/s`);

  const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC);
  const draw = trainingSequences(lm.config.vocabSize);
  const sequence = () => draw(TOKENS, CONTEXT);
  await trainer.sftStepOnTokens([sequence()], 1e-4); // warm-up: weight packing, kernel setup
  sampleRss();
  const times: number[] = [];
  const cpuTimes: number[] = [];
  for (let i = 0; i < STEPS; i++) {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await trainer.sftStepOnTokens([sequence()], 1e-4);
    times.push((performance.now() - t0) / 1000);
    const cpu = process.cpuUsage(cpu0);
    cpuTimes.push((cpu.user + cpu.system) / 1e6);
    sampleRss();
  }
  const load = os.loadavg()[0];
  const wasmHeap = tf.memory().numBytes;
  const shortPeakRss = peakRss;
  // One packed step the size of the service's default packing: 8 rows x 256 tokens.
  const long = Array.from({ length: 8 }, () => draw(256, 32));
  const t0 = performance.now();
  await trainer.sftStepOnTokens(long, 1e-4);
  const longSeconds = (performance.now() - t0) / 1000;
  sampleRss();
  trainer.dispose();
  lm.dispose();

  const c = lm.config;
  const perLayer = c.hiddenSize * (c.numHeads + 2 * c.numKvHeads) * c.headDim + c.numHeads * c.headDim * c.hiddenSize + 3 * c.hiddenSize * c.intermediateSize;
  // Forward 2 N P; backward only needs dL/dx through the frozen weights (another 2 N P), and
  // the lm_head runs only on the trainable (scored) positions; the LoRA matrices and attention
  // scores are small next to these at 64 tokens and left out.
  const flopsPerStep = 4 * (TOKENS * c.numLayers * perLayer + (TOKENS - CONTEXT) * c.hiddenSize * c.vocabSize);
  const best = Math.min(...times);
  const middle = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const median = middle(times);
  const achieved = flopsPerStep / median / 1e9;
  const r = {
    date: new Date().toISOString().slice(0, 10),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    node: process.version,
    backend: backend.name,
    threads: MATMUL_THREADS,
    median,
    best,
    times,
    cpuMedian: middle(cpuTimes),
    cpuTimes,
    load,
    tokensPerSecond: TOKENS / median,
    peak,
    achieved,
    ratio: achieved / peak,
    peakRssMb: shortPeakRss / 2 ** 20,
    tensorMb: wasmHeap / 2 ** 20,
    longSeconds,
    longPeakRssMb: peakRss / 2 ** 20,
  };
  console.log(JSON.stringify(r, null, 2));
  writeDoc(r);
}

function writeDoc(r: {
  date: string; cpu: string; cores: number; node: string; backend: string; threads: number; median: number; best: number; times: number[];
  cpuMedian: number; cpuTimes: number[]; load: number;
  tokensPerSecond: number; peak: number; achieved: number; ratio: number; peakRssMb: number; tensorMb: number;
  longSeconds: number; longPeakRssMb: number;
}): void {
  writeDocBlock(
    DOC,
    'train.bench.ts',
    `Measured by \`${r.threads === 1 ? '' : `MATMUL_THREADS=${r.threads} `}npx tsx libs/engine/bench/train.bench.ts\` on ${r.date} (${r.cpu}, ${r.cores} cores, Node
${r.node}, backend ${r.backend}${r.threads === 1 ? '' : `, the matmul on ${r.threads} threads`}), load average ${r.load.toFixed(1)} during the short steps.

| figure | measured | target | |
|---|---|---|---|
| one training step (median) | ${r.median.toFixed(2)} s | ≤ ${TARGET_SECONDS} s | ${r.median <= TARGET_SECONDS ? 'met' : 'missed'} |
| one training step (best) | ${r.best.toFixed(2)} s | | |
| one training step, CPU time of the process (median) | ${r.cpuMedian.toFixed(2)} s | | |
| training tokens/s | ${r.tokensPerSecond.toFixed(1)} | | |
| achieved FLOP/s | ${r.achieved.toFixed(2)} GFLOP/s | | |
| plain 2-D matMul peak, same backend | ${r.peak.toFixed(2)} GFLOP/s | | |
| achieved / peak | ${(100 * r.ratio).toFixed(0)} % | | |
| peak RSS | ${r.peakRssMb.toFixed(0)} MB | | |
| tfjs tensor memory after the steps | ${r.tensorMb.toFixed(0)} MB | | |
| one packed step of 8 x 256 tokens (the default packing's 2,048) | ${r.longSeconds.toFixed(1)} s (${(2048 / r.longSeconds).toFixed(1)} tokens/s) | | |
| peak RSS with that step | ${r.longPeakRssMb.toFixed(0)} MB | | |

Step times: ${r.times.map((t) => t.toFixed(2)).join(', ')} s; CPU times: ${r.cpuTimes.map((t) => t.toFixed(2)).join(', ')} s.
`,
  );
  console.log(`wrote the train.bench.ts block of ${DOC}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
