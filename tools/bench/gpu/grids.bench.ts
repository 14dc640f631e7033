/**
 * The grid of every dispatch a step makes: for each kernel (tfjs's kernel name, and for tfjs's
 * own programs the program's class), how many dispatches, how many threads a workgroup, and
 * the fewest and most workgroups a dispatch, with how many of its dispatches make fewer
 * workgroups than an H200 has multiprocessors (132). A dispatch of few workgroups leaves most
 * of a large GPU idle however fast each workgroup is: the census says which programs to split
 * before any GPU times them. The grids are the device's choice only through its limits (the
 * lm_head's chunk follows its largest storage binding), so they are the same on lavapipe as on
 * a GPU with the same limits.
 *
 * The model is SmolLM2-135M's shape with 2 of its 30 layers (a layer's dispatches repeat), on
 * the webgpu backend (lavapipe here), with the engine's kernels; the steps are a LoRA SFT step
 * of 4 x 256 tokens, a 512-token prefill and decoding at batch 1 and 128, each counted on its
 * second call.
 *
 *   npx tsx tools/bench/gpu/grids.bench.ts [--only sft,prefill,decode-1,decode-128]
 */
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../../../libs/engine/src/backend';
import { gpuPrototype, wrapMethod } from '../../../libs/engine/src/kernels/gpu-counters';
import { loadModel, LoadedModel } from '../../../libs/engine/src/loader';
import { installNavigatorGpu } from '../../../libs/engine/src/webgpu';
import { benchModel } from './bench-model';
import { BenchStep, decodeStep, option, prefillStep, sftStep } from './bench-steps';

/** Multiprocessors of an H200: a dispatch of fewer workgroups leaves some of them without work. */
const MULTIPROCESSORS = 132;

/** One dispatch: the kernel it ran for and its grid. */
interface Dispatch {
  kernel: string;
  workgroupSize: number;
  workgroups: number;
}

/** Threads a workgroup of a WGSL module's entry point (its @workgroup_size, multiplied out). */
function workgroupSizeOf(code: string): number {
  const size = /@workgroup_size\(([^)]*)\)/.exec(code)?.[1];
  return size ? size.split(',').reduce((threads, n) => threads * (Number(n.trim()) || 1), 1) : 0;
}

/**
 * Records the grid of every dispatch made while `record` is on: the kernel is the innermost tfjs
 * kernel running, with tfjs's program class where tfjs runs one (an encoded step's dispatches
 * run outside any kernel, named by their pipeline's label, the step's program), the workgroup
 * size read from the pipeline's WGSL.
 */
function watchDispatches(): { record: (on: Dispatch[] | null) => void } {
  let recording: Dispatch[] | null = null;
  const kernels: string[] = [];
  const engine = tf.engine() as unknown as { runKernelFunc(params: { kernelName?: string }): unknown };
  const runKernelFunc = engine.runKernelFunc.bind(engine);
  engine.runKernelFunc = (params) => {
    kernels.push(params.kernelName ?? 'an op');
    try {
      return runKernelFunc(params);
    } finally {
      kernels.pop();
    }
  };
  const codes = new WeakMap<object, string>();
  const pipelines = new WeakMap<object, { label: string; workgroupSize: number }>();
  const device = gpuPrototype('GPUDevice');
  wrapMethod(device, 'createShaderModule', (call, _, [descriptor]) => {
    const module = call() as object;
    codes.set(module, (descriptor as GPUShaderModuleDescriptor).code);
    return module;
  });
  const describe = (pipeline: object, descriptor: GPUComputePipelineDescriptor) => {
    const label = descriptor.label && descriptor.label !== 'Object' ? descriptor.label : '';
    pipelines.set(pipeline, { label, workgroupSize: workgroupSizeOf(codes.get(descriptor.compute.module) ?? '') });
    return pipeline;
  };
  wrapMethod(device, 'createComputePipeline', (call, _, [descriptor]) => describe(call() as object, descriptor as GPUComputePipelineDescriptor));
  wrapMethod(device, 'createComputePipelineAsync', (call, _, [descriptor]) => (call() as Promise<object>).then((p) => describe(p, descriptor as GPUComputePipelineDescriptor)));
  let current: { label: string; workgroupSize: number } | undefined;
  const pass = gpuPrototype('GPUComputePassEncoder');
  wrapMethod(pass, 'setPipeline', (call, _, [pipeline]) => {
    current = pipelines.get(pipeline as object);
    return call();
  });
  wrapMethod(pass, 'dispatchWorkgroups', (call, _, [x, y = 1, z = 1]) => {
    const inner = kernels[kernels.length - 1];
    const kernel = inner ? [inner, current?.label].filter(Boolean).join(', ') : `the encoded step's ${current?.label ?? 'program'}`;
    recording?.push({ kernel, workgroupSize: current?.workgroupSize ?? 0, workgroups: (x as number) * (y as number) * (z as number) });
    return call();
  });
  return { record: (on) => (recording = on) };
}

/** The census of `dispatches` as a markdown table, a row a kernel in the order each first ran. */
function census(dispatches: Dispatch[]): string[] {
  const rows = new Map<string, { count: number; size: number; fewest: number; most: number; few: number }>();
  for (const d of dispatches) {
    const key = `${d.kernel}|${d.workgroupSize}`;
    const row = rows.get(key) ?? { count: 0, size: d.workgroupSize, fewest: Infinity, most: 0, few: 0 };
    row.count++;
    row.fewest = Math.min(row.fewest, d.workgroups);
    row.most = Math.max(row.most, d.workgroups);
    if (d.workgroups < MULTIPROCESSORS) row.few++;
    rows.set(key, row);
  }
  return [...rows].map(([key, r]) => `| ${key.split('|')[0]} | ${r.count} | ${r.size} | ${r.fewest === r.most ? r.fewest : `${r.fewest} to ${r.most}`} | ${r.few} |`);
}

async function main(): Promise<void> {
  const only = option('--only', 'sft,prefill,decode-1,decode-128').split(',');
  installNavigatorGpu([]);
  const backend = await selectBackend('webgpu');
  const watch = watchDispatches();
  const lm = await loadModel(benchModel('smollm2-135m', { name: 'two-layers', overrides: { numLayers: 2 } }));
  const kinds: [string, string, (m: LoadedModel) => BenchStep | Promise<BenchStep>][] = [
    ['sft', 'LoRA SFT, 4 x 256 tokens', (m) => sftStep(m, 4, 256)],
    ['prefill', 'prefill, 512-token prompt', (m) => prefillStep(m, 512)],
    ['decode-1', 'decode, batch 1', (m) => decodeStep(m, 1)],
    ['decode-128', 'decode, batch 128', (m) => decodeStep(m, 128)],
  ];
  console.log(`smollm2-135m's shape with 2 layers, f32, webgpu on ${backend.adapter?.description || backend.adapter?.device || 'an unnamed adapter'}; node ${process.version}`);
  try {
    for (const [name, what, make] of kinds.filter(([name]) => only.includes(name))) {
      const bench = await make(lm);
      try {
        await bench.step();
        const dispatches: Dispatch[] = [];
        watch.record(dispatches);
        await bench.step();
        watch.record(null);
        console.log(`\n${what} (${name}): ${dispatches.length} dispatches\n`);
        console.log(`| kernel | dispatches | threads a workgroup | workgroups a dispatch | dispatches under ${MULTIPROCESSORS} workgroups |`);
        console.log('|---|---|---|---|---|');
        census(dispatches).forEach((row) => console.log(row));
      } finally {
        bench.dispose();
      }
    }
  } finally {
    lm.dispose();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
