/**
 * The host's own part of a step on webgpu: the main thread's CPU time to run a step's tfjs ops
 * and the engine's, record and submit its dispatches and read back its results, measured on
 * Dawn's null backend. That backend validates and records every WebGPU call as any other does
 * but runs nothing (its readbacks are zeros), so neither a GPU's waits nor a software driver's
 * threads are in the figure: on lavapipe, whose threads run the step on the same cores, the
 * main thread's CPU time of a step (polling.bench) is several times this. On a GPU the host's
 * part is this plus the driver's share of Dawn's calls, which the null backend does not have.
 * The GPU waits for whatever of it is not overlapped with its own work. Beside it: the part of
 * it in Dawn's createBindGroup (a decoding step makes its bind groups once, and the device keeps
 * those a training step's dispatches ask for again, webgpu-bind-groups.ts), and the most bytes
 * of the pool's buffers in use at once during a step above those in use as it starts (disposed
 * tensors' buffers return to the pool at the next queue submit, `--dispatches-per-submit`).
 *
 * The model is SmolLM2-135M's at half its width: its 30 layers, 9 query and 3 KV heads of 64,
 * and its vocabulary, with hidden and MLP widths of 288 and 768 (random weights from the model
 * maker, made under tmp/bench-models/ on first use), because the null device holds at most
 * 512 MB. The host's work of a step does not depend on the widths but for copies made on the
 * host. The null adapter binds WebGPU's default of 8 storage buffers a program, so its
 * optimizer takes two parameters a dispatch (four where 16 are bound).
 * Means over the timed steps, each after a full garbage collection and one untimed step (a
 * thread's CPU time is counted in the kernel's ticks, a few ms on some machines, too coarse for
 * one short step's median).
 * Besides a decoding and a training step, a prompt's prefill in a batch of its own, a request's
 * turn in a busy batch (its prompt's prefill, its cache written into the row another request
 * left, a step and its leaving; and again with each row dropped by a step after it leaves, so
 * that the next merges its cache after the others), and a training step over rows of new
 * lengths each step, as real batches come.
 *
 *   node tools/bench/built.mjs tools/bench/gpu/host.bench.ts [--steps 30] [--train-rows 4] [--train-tokens 16] [--dispatches-per-submit 64]
 *
 * Run bundled, as the workers run the engine (tools/bench/built.mjs): through tsx, every function
 * made at run time also has its name set, a cost the workers' build does not pay.
 *
 * Under callgrind (`bash tools/bench/gpu/host-instructions.sh`, which sets CALLGRIND_OUT), each
 * kind of step is counted in instructions instead, after 8 untimed steps for V8 to compile what
 * it runs: the same counts from run to run within a few per cent, where a small VM's timing
 * varies by a third. `--steps` is then 3 unless given.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend, setDispatchesPerSubmit, WEBGPU_DISPATCHES_PER_SUBMIT } from '../../../libs/engine/src/backend';
import { countGpuWork, gpuPrototype, wrapMethod } from '../../../libs/engine/src/kernels/gpu-counters';
import { loadModel, LoadedModel } from '../../../libs/engine/src/loader';
import { installNavigatorGpu } from '../../../libs/engine/src/webgpu';
import { BufferManagerInternals, setBufferPoolBytes } from '../../../libs/engine/src/webgpu-buffer-pool';
import { benchModel, BenchVariant } from './bench-model';
import { BenchStep, collectGarbage, decodeStep, joinStep, option, prefillStep, rlStep, sftStep, sftVariedStep, timeCalls } from './bench-steps';

/** SmolLM2-135M's layers, heads and vocabulary at half its hidden and MLP widths. */
const HALF_WIDTH: BenchVariant = { name: 'half-width', overrides: { hiddenSize: 288, intermediateSize: 768 } };

/**
 * The dispatches and queue submits one call of `step` makes, and over `steps` more the mean
 * main-thread CPU milliseconds of a step and of Dawn's createBindGroup calls in it (wall time,
 * which on the main thread is its CPU time), and the most MB of the pool's buffers in use at once
 * above those in use as a step starts.
 */
async function hostCost(step: () => Promise<unknown>, steps: number): Promise<{ dispatches: number; submits: number; cpuMs: number; bindGroupMs: number; peakMb: number }> {
  const { dispatches, submits } = (await countGpuWork(step)).counts;
  const cpu: number[] = [];
  const bindGroups: number[] = [];
  let inBindGroups = 0;
  const restore = timeCalls(gpuPrototype('GPUDevice'), 'createBindGroup', (ms) => (inBindGroups += ms));
  // The most bytes of the pool's buffers in use at once during a step, above those in use as it starts.
  const manager = (tf.backend() as unknown as { bufferManager: BufferManagerInternals }).bufferManager;
  let peak = 0;
  const unwrap = wrapMethod(manager, 'acquireBuffer', (call) => {
    const buffer = call();
    peak = Math.max(peak, manager.numBytesUsed);
    return buffer;
  });
  let peakAbove = 0;
  try {
    for (let s = 0; s < steps; s++) {
      collectGarbage();
      inBindGroups = 0;
      const start = (peak = manager.numBytesUsed);
      const before = process.threadCpuUsage();
      await step();
      const used = process.threadCpuUsage(before);
      cpu.push((used.user + used.system) / 1000);
      bindGroups.push(inBindGroups);
      peakAbove = Math.max(peakAbove, peak - start);
    }
  } finally {
    restore();
    unwrap();
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return { dispatches, submits, cpuMs: mean(cpu), bindGroupMs: mean(bindGroups), peakMb: peakAbove / 2 ** 20 };
}

/** Where callgrind writes its counts, when the bench runs under it (host-instructions.sh). */
const callgrindOut = process.env['CALLGRIND_OUT'];

/** Sends callgrind `command` (-z zeroes the counts, -d dumps them); valgrind takes a command only while the program runs, so the main thread runs until it is taken. */
async function callgrind(command: '-z' | '-d'): Promise<void> {
  let done = false;
  spawn('callgrind_control', [command, String(process.pid)], { stdio: 'ignore' }).on('exit', () => (done = true));
  while (!done) await new Promise((resolve) => setImmediate(resolve));
}

/** The instructions in callgrind's latest dump (`CALLGRIND_OUT`.1, .2, ...). */
function lastDumpInstructions(out: string): number {
  const dumps = readdirSync(path.dirname(out)).filter((name) => name.startsWith(`${path.basename(out)}.`));
  const last = dumps.sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop())).pop();
  const totals = last ? /^(?:totals|summary): (\d+)/m.exec(readFileSync(path.join(path.dirname(out), last), 'utf8')) : null;
  if (!totals) throw new Error(`no callgrind dump with totals beside ${out}`);
  return Number(totals[1]);
}

/** The dispatches one call of `step` makes, and the instructions of each of `steps` more, counted by callgrind after 8 untimed steps. */
async function hostInstructions(out: string, step: () => Promise<unknown>, steps: number): Promise<{ dispatches: number; submits: number; instructions: number }> {
  const { dispatches, submits } = (await countGpuWork(step)).counts;
  for (let s = 0; s < 8; s++) await step();
  collectGarbage();
  await callgrind('-z');
  for (let s = 0; s < steps; s++) await step();
  await callgrind('-d');
  return { dispatches, submits, instructions: lastDumpInstructions(out) / steps };
}

async function main(): Promise<void> {
  const steps = Number(option('--steps', callgrindOut ? '3' : '30'));
  const trainRows = Number(option('--train-rows', '4'));
  const trainTokens = Number(option('--train-tokens', '16'));
  installNavigatorGpu(['backend=null']);
  // Within the null device's 512 MB beside the model and a step's tensors: a joining row's cache is of a new size each time (webgpu-buffer-pool.ts).
  setBufferPoolBytes(128 * 2 ** 20);
  const backend = await selectBackend('webgpu');
  if (backend.adapter?.device !== 'null-backend') throw new Error(`expected Dawn's null backend, got ${JSON.stringify(backend.adapter)}`);
  // The engine's (backend.ts) unless told otherwise, to compare.
  const perSubmit = Number(option('--dispatches-per-submit', String(WEBGPU_DISPATCHES_PER_SUBMIT)));
  setDispatchesPerSubmit(perSubmit);
  const lm = await loadModel(benchModel('smollm2-135m', HALF_WIDTH));
  const kinds: [string, (lm: LoadedModel) => BenchStep | Promise<BenchStep>][] = [
    ['prefill, 512-token prompt', (m) => prefillStep(m, 512)],
    ['decode, batch 1', (m) => decodeStep(m, 1)],
    ['decode, batch 1, a run of 4 steps fed on the GPU', (m) => decodeStep(m, 1, 4)],
    ['a row joins a batch of 3 in the row one left (16-token prompt), one step, the row leaves', (m) => joinStep(m, 3, 16)],
    ['a row joins a batch of 3 after the others (16-token prompt), one step, the row leaves, one step', (m) => joinStep(m, 3, 16, true)],
    [`LoRA SFT, ${trainRows} x ${trainTokens} tokens`, (m) => sftStep(m, trainRows, trainTokens)],
    [`LoRA SFT, ${trainRows} rows of ${trainTokens / 2} to ${trainTokens} tokens, new lengths each step`, (m) => sftVariedStep(m, trainRows, trainTokens)],
    [`RL step (ART's default loss), ${trainRows} x ${trainTokens} tokens`, (m) => rlStep(m, trainRows, trainTokens)],
  ];
  const rows: string[] = [];
  try {
    for (const [what, make] of kinds) {
      process.stderr.write(`  ${what}\n`);
      const bench = await make(lm);
      try {
        await bench.step();
        if (callgrindOut) {
          const { dispatches, submits, instructions } = await hostInstructions(callgrindOut, bench.step, steps);
          rows.push(`| ${what} | ${dispatches} | ${submits} | ${(instructions / 1e6).toFixed(1)} | ${(instructions / dispatches / 1e3).toFixed(1)} |`);
          continue;
        }
        const { dispatches, submits, cpuMs, bindGroupMs, peakMb } = await hostCost(bench.step, steps);
        const perDispatch = (ms: number) => ((1000 * ms) / dispatches).toFixed(0);
        rows.push(`| ${what} | ${dispatches} | ${submits} | ${cpuMs.toFixed(1)} | ${perDispatch(cpuMs)} | ${perDispatch(bindGroupMs)} | ${peakMb.toFixed(1)} |`);
      } finally {
        bench.dispose();
      }
    }
  } finally {
    lm.dispose();
  }
  if (process.execArgv.some((arg) => arg.includes('tsx'))) console.log('run through tsx, which sets the name of every function made at run time: the workers do not; run it through tools/bench/built.mjs');
  console.log(`smollm2-135m's layers at half its width (hidden ${lm.config.hiddenSize}, MLP ${lm.config.intermediateSize}), ${lm.config.numLayers} layers, f32; Dawn's null backend; a queue submit every ${perSubmit} dispatches; node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}`);
  if (callgrindOut) {
    console.log(`| a step | dispatches | queue submits | million instructions a step (${steps} steps) | thousand a dispatch |`);
    console.log('|---|---|---|---|---|');
  } else {
    console.log("| a step | dispatches | queue submits | main thread's CPU ms, mean | µs a dispatch | of which createBindGroup, µs a dispatch | most MB of buffers in use, above the step's start |");
    console.log('|---|---|---|---|---|---|---|');
  }
  rows.forEach((row) => console.log(row));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
