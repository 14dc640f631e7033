/**
 * The host's part of a decoding step on webgpu: how long WebGpuDecodeStep takes to encode one
 * step (the GPU waits for it at batch 1, since each step reads back before the next is
 * encoded), how much of that is Dawn's calls per dispatch (setPipeline, setBindGroup,
 * dispatchWorkgroups), and how long the queue submit takes after it. Medians over greedy steps
 * of one batch, each step timed apart, with a full garbage collection before each: while a
 * step's readback is pending, Dawn's node binding polls the device from setImmediate callbacks,
 * and over a step as long as lavapipe's that leaves enough garbage for the next step's first
 * allocation to collect it, which would be counted as encoding. Any adapter will do, lavapipe
 * included: the host's work is the same, though Dawn's submit differs by driver.
 *
 *   npx tsx tools/bench/gpu/encode.bench.ts [--preset smollm2-135m] [--rows 1] [--steps 20]
 *
 * The model (random weights, made by the model maker) is made under tmp/bench-models/ on first use.
 */
import * as os from 'node:os';
import { selectBackend } from '../../../libs/engine/src/backend';
import { WebGpuDecodeStep } from '../../../libs/engine/src/kernels/decode-step.webgpu';
import { gpuPrototype } from '../../../libs/engine/src/kernels/gpu-counters';
import { loadModel } from '../../../libs/engine/src/loader';
import type { Preset } from '../../../libs/engine/src/maker/make-model';
import { benchModel } from './bench-model';
import { collectGarbage, decodeStep, median, option, timeCalls } from './bench-steps';

async function main(): Promise<void> {
  const preset = option('--preset', 'smollm2-135m') as Preset;
  const rows = Number(option('--rows', '1'));
  const steps = Number(option('--steps', '20'));
  const backend = await selectBackend('webgpu');
  const lm = await loadModel(benchModel(preset), { inferenceOnly: true });
  const decode = await decodeStep(lm, rows);
  for (let s = 0; s < 3; s++) await decode.step();
  let current: Record<string, number> = {};
  const perStep: Record<string, number>[] = [];
  // Milliseconds added to the current step's `label`.
  const spentOn = (label: string) => (ms: number) => (current[label] = (current[label] ?? 0) + ms);
  const restore = [
    timeCalls(WebGpuDecodeStep.prototype, 'encode', spentOn('encode')),
    ...['setPipeline', 'setBindGroup', 'dispatchWorkgroups'].map((m) => timeCalls(gpuPrototype('GPUComputePassEncoder'), m, spentOn('dawn'))),
    timeCalls(gpuPrototype('GPUQueue'), 'submit', spentOn('submit')),
  ];
  try {
    for (let s = 0; s < steps; s++) {
      collectGarbage();
      current = {};
      await decode.step();
      perStep.push(current);
    }
  } finally {
    restore.forEach((undo) => undo());
    decode.dispose();
    lm.dispose();
  }
  const medianOf = (label: string) => median(perStep.map((p) => p[label] ?? 0)).toFixed(2);
  const adapter = backend.adapter ? `${backend.adapter.vendor} ${backend.adapter.description || backend.adapter.device}` : 'none';
  console.log(`${preset}, ${lm.config.numLayers} layers, batch ${rows}, ${steps} steps; adapter ${adapter}; node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'}`);
  console.log(`encode: median ${medianOf('encode')} ms a step, Dawn's calls per dispatch in it ${medianOf('dawn')} ms; submit: median ${medianOf('submit')} ms`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
