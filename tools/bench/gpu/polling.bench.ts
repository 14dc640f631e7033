/**
 * What Dawn's polling costs while the engine waits for the GPU (libs/engine/src/dawn-polling.ts):
 * a decoding step at batch 1 and a LoRA SFT step, each timed with Dawn's ticks paced (the
 * engine's default) and left to spin, as the dispatches it makes, as wall time, as the process's CPU time (user and
 * system, every thread) and as the main thread's CPU time per step. On a GPU the process's CPU
 * time is the host's, and the wall time says what pacing adds to a step's latency; on
 * lavapipe, whose threads do the GPU's work on the same cores, the wall time says what the
 * spinning takes from them. Paced, the main thread's CPU time is the host's own part of a step
 * (encoding, tfjs's ops, reading back), which a GPU waits for wherever it is not overlapped
 * with the GPU's work: it is the same on any adapter but for the driver's share of Dawn's calls.
 * Medians, each step timed apart after a full garbage collection.
 *
 *   npx tsx tools/bench/gpu/polling.bench.ts [--preset smollm2-135m] [--decode-steps 20] [--train-steps 3] [--train-rows 4] [--train-tokens 16]
 *
 * The model (random weights, made by the model maker) is made under tmp/bench-models/ on first use.
 */
import * as os from 'node:os';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { selectBackend } from '../../../libs/engine/src/backend';
import { DawnPolling, dawnPollCounts, setDawnPolling } from '../../../libs/engine/src/dawn-polling';
import { DecodeBatch } from '../../../libs/engine/src/decode-batch';
import { countGpuWork } from '../../../libs/engine/src/kernels/gpu-counters';
import type { RowDraw } from '../../../libs/engine/src/kernels/sample';
import { loadModel, LoadedModel } from '../../../libs/engine/src/loader';
import { DEFAULT_LORA_SPEC } from '../../../libs/engine/src/lora/peft';
import type { Preset } from '../../../libs/engine/src/maker/make-model';
import { benchModel } from './bench-model';
import { LoraTrainer } from '../../../libs/engine/src/training/trainer';

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

/** Wall, process CPU and main-thread CPU milliseconds of one call, and Dawn's ticks in it. */
interface Timed {
  wall: number;
  cpu: number;
  mainCpu: number;
  ticks: number;
}

const collect = (() => {
  // The collector, without node's --expose-gc on the command line.
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
})();

async function timed(step: () => Promise<unknown>): Promise<Timed> {
  collect();
  const ticks = dawnPollCounts().ticks;
  const cpu = process.cpuUsage();
  const mainCpu = process.threadCpuUsage();
  const t0 = performance.now();
  await step();
  const wall = performance.now() - t0;
  const used = process.cpuUsage(cpu);
  const usedMain = process.threadCpuUsage(mainCpu);
  return { wall, cpu: (used.user + used.system) / 1000, mainCpu: (usedMain.user + usedMain.system) / 1000, ticks: dawnPollCounts().ticks - ticks };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Medians over `steps` calls of `step` with the polling `mode`, after one untimed call. */
async function measure(mode: DawnPolling, steps: number, step: () => Promise<unknown>): Promise<Timed> {
  setDawnPolling(mode);
  try {
    await step();
    const runs: Timed[] = [];
    for (let s = 0; s < steps; s++) runs.push(await timed(step));
    const of = (key: keyof Timed) => median(runs.map((r) => r[key]));
    return { wall: of('wall'), cpu: of('cpu'), mainCpu: of('mainCpu'), ticks: of('ticks') };
  } finally {
    setDawnPolling('paced');
  }
}

async function decodeStep(lm: LoadedModel): Promise<{ step: () => Promise<unknown>; dispose: () => void }> {
  const batch = new DecodeBatch<number>(lm.model);
  await batch.join(0, [1, 2, 3, 4]);
  const next = new Map([[0, 5]]);
  const greedy = new Map<number, RowDraw>([[0, { temperature: 0, u: 0 }]]);
  return { step: () => batch.stepDrawn(next, greedy), dispose: () => batch.dispose() };
}

function trainStep(lm: LoadedModel, rows: number, tokens: number): { step: () => Promise<unknown>; dispose: () => void } {
  const trainer = new LoraTrainer(lm, DEFAULT_LORA_SPEC, undefined, { seed: 1, microBatchTokens: rows * tokens });
  const sequences = Array.from({ length: rows }, (_, r) => {
    const ids = Array.from({ length: tokens }, (_, i) => 5 + ((i * 7 + r * 13) % 1000));
    return { tokens: ids, mask: ids.map((_, i) => (i < 2 ? 0 : 1)) };
  });
  return { step: () => trainer.sftStepOnTokens(sequences, 1e-4), dispose: () => trainer.dispose() };
}

/** The dispatches one untimed call of `step` makes. */
async function dispatches(step: () => Promise<unknown>): Promise<number> {
  return (await countGpuWork(step)).counts.dispatches;
}

async function main(): Promise<void> {
  const preset = option('--preset', 'smollm2-135m') as Preset;
  const decodeSteps = Number(option('--decode-steps', '20'));
  const trainSteps = Number(option('--train-steps', '3'));
  const trainRows = Number(option('--train-rows', '4'));
  const trainTokens = Number(option('--train-tokens', '16'));
  const backend = await selectBackend('webgpu');
  const lm = await loadModel(benchModel(preset));
  const rows: [string, number, Timed, Timed][] = [];
  try {
    const decode = await decodeStep(lm);
    try {
      rows.push(['decode, batch 1', await dispatches(decode.step), await measure('paced', decodeSteps, decode.step), await measure('spin', decodeSteps, decode.step)]);
    } finally {
      decode.dispose();
    }
    const train = trainStep(lm, trainRows, trainTokens);
    try {
      rows.push([`LoRA SFT, ${trainRows} x ${trainTokens} tokens`, await dispatches(train.step), await measure('paced', trainSteps, train.step), await measure('spin', trainSteps, train.step)]);
    } finally {
      train.dispose();
    }
  } finally {
    lm.dispose();
  }
  const adapter = backend.adapter ? `${backend.adapter.vendor} ${backend.adapter.description || backend.adapter.device}` : 'none';
  console.log(`${preset}, ${lm.config.numLayers} layers; adapter ${adapter}; node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}`);
  console.log("| a step, medians | dispatches | wall ms, paced / spinning | CPU ms, paced / spinning | main thread's CPU ms, paced / spinning | Dawn's polls, paced / spinning |");
  console.log('|---|---|---|---|---|---|');
  const pair = (a: number, b: number) => `${a.toFixed(1)} / ${b.toFixed(1)}`;
  for (const [what, count, paced, spin] of rows) console.log(`| ${what} | ${count} | ${pair(paced.wall, spin.wall)} | ${pair(paced.cpu, spin.cpu)} | ${pair(paced.mainCpu, spin.mainCpu)} | ${paced.ticks} / ${spin.ticks} |`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
