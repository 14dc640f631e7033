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
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { selectBackend } from '../../../libs/engine/src/backend';
import { DecodeBatch } from '../../../libs/engine/src/decode-batch';
import { WebGpuDecodeStep } from '../../../libs/engine/src/kernels/decode-step.webgpu';
import { gpuPrototype, wrapMethod } from '../../../libs/engine/src/kernels/gpu-counters';
import type { RowDraw } from '../../../libs/engine/src/kernels/sample';
import { loadModel } from '../../../libs/engine/src/loader';
import type { Preset } from '../../../libs/engine/src/maker/make-model';
import { benchModel } from './bench-model';

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

/** Wraps `owner[method]` so that each call's milliseconds are added to `into()[label]`. */
function timed(owner: object, method: string, label: string, into: () => Record<string, number>): () => void {
  return wrapMethod(owner, method, (call) => {
    const t0 = performance.now();
    try {
      return call();
    } finally {
      const spent = into();
      spent[label] = (spent[label] ?? 0) + performance.now() - t0;
    }
  });
}

async function main(): Promise<void> {
  const preset = option('--preset', 'smollm2-135m') as Preset;
  const rows = Number(option('--rows', '1'));
  const steps = Number(option('--steps', '20'));
  const backend = await selectBackend('webgpu');
  const lm = await loadModel(benchModel(preset), { inferenceOnly: true });
  const batch = new DecodeBatch<number>(lm.model);
  const next = new Map<number, number>();
  for (let i = 0; i < rows; i++) {
    await batch.join(i, [1, 2, 3, 4 + i]);
    next.set(i, 5);
  }
  const draws = new Map<number, RowDraw>(Array.from({ length: rows }, (_, i) => [i, { temperature: 0, u: 0 }]));
  for (let s = 0; s < 3; s++) await batch.stepDrawn(next, draws);
  let current: Record<string, number> = {};
  const perStep: Record<string, number>[] = [];
  const restore = [
    timed(WebGpuDecodeStep.prototype, 'encode', 'encode', () => current),
    ...['setPipeline', 'setBindGroup', 'dispatchWorkgroups'].map((m) => timed(gpuPrototype('GPUComputePassEncoder'), m, 'dawn', () => current)),
    timed(gpuPrototype('GPUQueue'), 'submit', 'submit', () => current),
  ];
  // The collector, without node's --expose-gc on the command line.
  v8.setFlagsFromString('--expose-gc');
  const collect = vm.runInNewContext('gc') as () => void;
  try {
    for (let s = 0; s < steps; s++) {
      collect();
      current = {};
      await batch.stepDrawn(next, draws);
      perStep.push(current);
    }
  } finally {
    restore.forEach((undo) => undo());
    batch.dispose();
    lm.dispose();
  }
  const median = (label: string) => {
    const values = perStep.map((p) => p[label] ?? 0).sort((a, b) => a - b);
    return values[Math.floor(values.length / 2)].toFixed(2);
  };
  const adapter = backend.adapter ? `${backend.adapter.vendor} ${backend.adapter.description || backend.adapter.device}` : 'none';
  console.log(`${preset}, ${lm.config.numLayers} layers, batch ${rows}, ${steps} steps; adapter ${adapter}; node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'}`);
  console.log(`encode: median ${median('encode')} ms a step, Dawn's calls per dispatch in it ${median('dawn')} ms; submit: median ${median('submit')} ms`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
