/**
 * What Dawn's polling costs while the engine waits for the GPU (libs/engine/src/dawn-polling.ts):
 * a decoding step at batch 1 and a LoRA SFT step, each timed with Dawn's ticks paced (the
 * engine's default) and left to spin, as the dispatches it makes, as wall time, as the process's
 * CPU time (user and system, every thread) and as the main thread's, per step. On a GPU the
 * process's CPU time is the host's, and the wall time says what pacing adds to a step's latency;
 * on lavapipe, whose threads do the GPU's work on the same cores, the wall time says what the
 * spinning takes from them. The main thread's CPU time there is not the host's own part of a
 * step: Dawn's polls cost it, and the driver's threads slow it down (host.bench.ts measures the
 * host's part where the GPU does nothing). Medians, each step timed apart after a full garbage
 * collection.
 *
 *   npx tsx tools/bench/gpu/polling.bench.ts [--preset smollm2-135m] [--decode-steps 20] [--train-steps 3] [--train-rows 4] [--train-tokens 16]
 *
 * The model (random weights, made by the model maker) is made under tmp/bench-models/ on first use.
 */
import * as os from 'node:os';
import { selectBackend } from '../../../libs/engine/src/backend';
import { DawnPolling, dawnPollCounts, setDawnPolling } from '../../../libs/engine/src/dawn-polling';
import { countGpuWork } from '../../../libs/engine/src/kernels/gpu-counters';
import { loadModel } from '../../../libs/engine/src/loader';
import type { Preset } from '../../../libs/engine/src/maker/make-model';
import { benchModel } from './bench-model';
import { collectGarbage, decodeStep, median, option, sftStep } from './bench-steps';

/** Wall, process CPU and main-thread CPU milliseconds of one call, and Dawn's ticks in it. */
interface Timed {
  wall: number;
  cpu: number;
  mainCpu: number;
  ticks: number;
}

async function timed(step: () => Promise<unknown>): Promise<Timed> {
  collectGarbage();
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
    const decode = await decodeStep(lm, 1);
    try {
      rows.push(['decode, batch 1', await dispatches(decode.step), await measure('paced', decodeSteps, decode.step), await measure('spin', decodeSteps, decode.step)]);
    } finally {
      decode.dispose();
    }
    const train = sftStep(lm, trainRows, trainTokens);
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
