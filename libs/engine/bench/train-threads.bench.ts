/**
 * One LoRA training step on 1 and on more matmul threads, SmolLM2-135M shape (random f32
 * weights, made under var/models/ as train.bench.ts makes them), as train.bench.ts times it: r 8, alpha 16 on all
 * seven projections, one 64-token sequence, forward, backward and AdamW.
 *
 *   npx tsx --tsconfig tsconfig.base.json libs/engine/bench/train-threads.bench.ts
 *   THREADS=1,2 ROUNDS=4 STEPS=3 npx tsx --tsconfig tsconfig.base.json libs/engine/bench/train-threads.bench.ts
 *
 * Threads are set for a whole process, so each case runs in a fresh child process, and the
 * cases take turns, round after round (a machine shared with other jobs drifts between
 * rounds more than between neighbours). Each child loads the model with matmulThreads, takes
 * one warm-up step (packing the weights), then times STEPS steps: wall time and the process's
 * CPU time (all its threads). The parent reports each case's median step over all rounds, the
 * range of the children's medians, and the load average around each child, and rewrites its
 * block of docs/benchmarks.md.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { selectBackend } from '../src/backend';
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
const STEPS = Number(process.env['STEPS'] ?? 3);
const ROUNDS = Number(process.env['ROUNDS'] ?? 4);
const THREADS = (process.env['THREADS'] ?? '1,2').split(',').map(Number);

interface ChildResult {
  wall: number[];
  cpu: number[];
  loadBefore: number;
  loadAfter: number;
}

/** STEPS timed steps after one warm-up, in this process, on `threads` matmul threads. */
async function timeSteps(threads: number): Promise<ChildResult> {
  const loadBefore = os.loadavg()[0];
  await selectBackend('wasm');
  const lm = await loadModel(MODEL_DIR, { matmulThreads: threads });
  const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC);
  // The same sequences in every process, as train.bench.ts draws them.
  const draw = trainingSequences(lm.config.vocabSize);
  const sequence = () => [draw(TOKENS, 16)];
  await trainer.sftStepOnTokens(sequence(), 1e-4);
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < STEPS; i++) {
    const step = sequence();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await trainer.sftStepOnTokens(step, 1e-4);
    wall.push((performance.now() - t0) / 1000);
    const used = process.cpuUsage(cpu0);
    cpu.push((used.user + used.system) / 1e6);
  }
  trainer.dispose();
  lm.dispose();
  return { wall, cpu, loadBefore, loadAfter: os.loadavg()[0] };
}

/** This script again in a fresh process, for one thread count. */
function child(threads: number): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...process.execArgv, __filename], {
      env: { ...process.env, CASE: String(threads) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk));
    proc.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop() as string)) : reject(new Error(`child exited with ${code}`))));
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The CPU as /proc/cpuinfo names it, with its family and model numbers (which tell the generation where the name does not). */
function cpuName(): string {
  const info = fs.existsSync('/proc/cpuinfo') ? fs.readFileSync('/proc/cpuinfo', 'utf8') : '';
  const field = (name: string) => (info.match(new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm')) ?? [])[1];
  const name = field('model name') ?? os.cpus()[0]?.model ?? 'unknown';
  return field('cpu family') ? `${name}, family ${field('cpu family')} model ${field('model')}` : name;
}

async function main(): Promise<void> {
  const own = process.env['CASE'];
  if (own) {
    console.log(JSON.stringify(await timeSteps(Number(own))));
    return;
  }
  if (!fs.existsSync(path.join(MODEL_DIR, 'model.safetensors'))) {
    console.log(`making ${MODEL_DIR}`);
    makeModel({ preset: 'smollm2-135m', out: MODEL_DIR, seed: 0 });
  }
  const cases = THREADS.map((threads) => ({ threads, runs: [] as ChildResult[] }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) {
      const run = await child(c.threads);
      c.runs.push(run);
      console.log(`round ${round + 1}, ${c.threads} thread(s): ${run.wall.map((t) => t.toFixed(2)).join(', ')} s wall, ${run.cpu.map((t) => t.toFixed(2)).join(', ')} s CPU, load ${run.loadBefore.toFixed(1)}-${run.loadAfter.toFixed(1)}`);
    }
  }
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(', ');
  const rows = cases.map((c) => {
    const wall = c.runs.flatMap((r) => r.wall);
    const cpu = c.runs.flatMap((r) => r.cpu);
    const perRun = c.runs.map((r) => median(r.wall));
    return `| ${c.threads} | ${median(wall).toFixed(2)} s | ${Math.min(...perRun).toFixed(2)}-${Math.max(...perRun).toFixed(2)} s | ${median(cpu).toFixed(2)} s | ${fmt(perRun)} |`;
  });
  const loads = cases.flatMap((c) => c.runs.flatMap((r) => [r.loadBefore, r.loadAfter]));
  const body = `Measured by \`npx tsx --tsconfig tsconfig.base.json libs/engine/bench/train-threads.bench.ts\` on ${new Date().toISOString().slice(0, 10)}
(${cpuName()}; ${os.cpus().length} cores; Node ${process.version}, backend wasm): ${ROUNDS} rounds, each
case in a fresh process, alternating; ${STEPS} timed steps per process after a warm-up; load average (1 min)
${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)} around the processes.

| matmul threads | step (median, wall) | range of the processes' medians | CPU time of the process per step (median) | each process's median wall |
|---|---|---|---|---|
${rows.join('\n')}
`;
  console.log(body);
  writeDocBlock(DOC, 'train-threads.bench.ts', body);
  console.log(`wrote the train-threads.bench.ts block of ${DOC}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
