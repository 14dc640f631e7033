import * as os from 'node:os';
import * as tf from '@tensorflow/tfjs-core';

/** Calls and milliseconds per run of each kernel, as tf.profile times them. */
export interface KernelProfile {
  runs: number;
  /** Wall time per run under tf.profile, ms. */
  wall: number;
  byKernel: Map<string, { calls: number; ms: number }>;
}

/**
 * Runs `run` `runs` times under tf.profile and sums its kernels by label: tf.profile times
 * each kernel call by wall clock on wasm; the difference from the wall time is JS, the tape
 * and tfjs's bookkeeping between kernels.
 */
export async function profileKernels(run: () => Promise<unknown>, runs: number): Promise<KernelProfile> {
  const byKernel = new Map<string, { calls: number; ms: number }>();
  let wall = 0;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const info = await tf.profile(async () => {
      await run();
      return [];
    });
    wall += performance.now() - t0;
    for (const k of info.kernels) {
      const entry = byKernel.get(label(k)) ?? { calls: 0, ms: 0 };
      entry.calls++;
      entry.ms += typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
      byKernel.set(label(k), entry);
    }
  }
  return { runs, wall: wall / runs, byKernel };
}

/** The machine, then per run: the times without tf.profile, the wall and kernel time under it, and every kernel of 1 ms or more. */
export function printProfile(profile: KernelProfile, what: string, plain: number[], settings: string): void {
  const { runs, wall } = profile;
  const rows = [...profile.byKernel].sort((a, b) => b[1].ms - a[1].ms);
  const kernelMs = rows.filter(([name]) => !name.startsWith('(scope)')).reduce((s, [, e]) => s + e.ms, 0) / runs;
  console.log(`${os.cpus()[0]?.model}, ${os.cpus().length} cores, Node ${process.version}, ${settings}, load average ${os.loadavg()[0].toFixed(1)}`);
  console.log(`per ${what} without tf.profile: ${plain.map((ms) => ms.toFixed(0)).join(', ')} ms`);
  console.log(`per ${what}: wall ${wall.toFixed(0)} ms (under tf.profile), kernels ${kernelMs.toFixed(0)} ms, the rest ${(wall - kernelMs).toFixed(0)} ms`);
  console.log(`kernel                                      calls/${what.padEnd(4)}  ms/${what.padEnd(4)}   share`);
  for (const [name, e] of rows) {
    if (e.ms / runs < 1) continue;
    console.log(`${name.padEnd(44)}${String(Math.round(e.calls / runs)).padStart(10)}${(e.ms / runs).toFixed(1).padStart(10)}${((100 * e.ms) / runs / kernelMs).toFixed(1).padStart(7)} %`);
  }
}

/**
 * A kernel's name, the packed products told apart by their shapes (LoRA's factors have r
 * columns), and custom gradients' scopes marked: their time includes the kernels inside them,
 * which are listed too, so scopes are left out of the sum.
 */
function label(k: { name: string; inputShapes: number[][]; outputShapes: number[][] }): string {
  if (k.name === 'unnamed scope' || k.name === 'forward') return `(scope) ${k.name}`;
  if (k.name.startsWith('TrainyardPackedMatMul')) {
    const n = k.outputShapes[0]?.[1] ?? 0;
    return `${k.name} ${n <= 32 ? 'small' : 'large'}`;
  }
  if (k.name === 'BatchMatMul') {
    const [a, b] = k.inputShapes;
    const small = Math.min(...(a ?? []), ...(b ?? [])) <= 32;
    return `BatchMatMul ${small ? 'with a side of r or fewer' : 'other'}`;
  }
  return k.name;
}
