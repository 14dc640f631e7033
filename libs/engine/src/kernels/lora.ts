import * as tf from '@tensorflow/tfjs-core';
import { LORA_WASM } from './lora.wasm';
import { DEFAULT_MATMUL_PLAN, matMulAttrs, MatMulPlan, PackedWeights, packedMatMulInto } from './matmul';
import type { ThreadedLoraPart } from './matmul-threads';
import { transposedKernelApplies } from './matmul-transposed';
import { heapOffset, heapView, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';

/**
 * LoRA's products beside a frozen projection, for training on tfjs-wasm (source, with the
 * products written out: libs/engine/assembly/lora.ts): every adapter of one projection in one
 * kernel call per pass, the forward deltas added to the projection's product, and in the
 * backward pass the factors' gradients and the adapters' share of dx. As tfjs ops the same
 * took about a dozen dispatches per adapter and pass (two packed or XNNPACK products, the
 * transposes of x, h and the factors, the scale, the adds), with multiply-adds into r columns
 * where tfjs runs a few GFLOP/s. Training's forward pass runs the frozen product and its
 * adapters in one kernel call (projectWithLora); where the projection's weights are on the
 * matmul threads (matmul-threads.ts), the forward's deltas are divided between the threads,
 * and from DIVIDED_BACKWARD_THREADS the whole backward pass too (loraGradientsOnThreads):
 * the same bits as on this thread.
 */
const FORWARD = 'TrainyardLoraForward';
const BACKWARD = 'TrainyardLoraBackward';
const PROJECTION = 'TrainyardLoraProjection';
const THREADED_BACKWARD = 'TrainyardThreadedLoraBackward';

/** One adapter of a projection: delta = scale (x aT) bT on its output columns [col, col + width). */
export interface LoraPart {
  /** [in, r] */
  aT: tf.Tensor2D;
  /** [r, width] */
  bT: tf.Tensor2D;
  /** alpha / r, or null for 1 (folded into bT). */
  scale: tf.Scalar | null;
  col: number;
  width: number;
  /**
   * The rows of the product it applies to, ascending, where adapters share a batch row by row
   * (lora/lora-router.ts); every row when absent. Training's parts have none.
   */
  rows?: readonly number[];
}

interface Attrs extends tf.NamedAttrMap {
  cols: number[];
  scaled: boolean[];
  /** Whether each part applies to some rows only (LoraPart.rows)... */
  routed: boolean[];
  /** ...and those parts' runs of consecutive rows, as [part, from, to] triples. */
  runs: number[];
}

/** A part as the kernels take it: its tensors, its scale as a number and its runs of rows [from, to) (null: every row). */
interface KernelPart {
  aT: tf.TensorInfo;
  bT: tf.TensorInfo;
  scale: number;
  col: number;
  r: number;
  width: number;
  runs: [number, number][] | null;
}

interface LoraKernels {
  loraForward(x: number, aT: number, bT: number, s: number, y: number, M: number, K: number, r: number, N: number, yWidth: number, col: number, h: number): void;
  loraBackward(x: number, dy: number, aT: number, bT: number, s: number, dx: number, daT: number, dbT: number, M: number, K: number, r: number, N: number, dyWidth: number, col: number, h: number, dh: number, a: number): void;
}

function kernelsFor(backend: object): LoraKernels | null {
  return instantiateOnHeap(LORA_WASM, backend) as unknown as LoraKernels | null;
}

/** The inputs of part i, and its scale as a number (read from the heap: no read-back through tfjs). */
function partInputs(inputs: tf.NamedTensorInfoMap, attrs: Attrs, wasm: WasmBackendInternals): KernelPart[] {
  const runs = attrs.routed.map((routed): [number, number][] | null => (routed ? [] : null));
  for (let i = 0; i < attrs.runs.length; i += 3) runs[attrs.runs[i]]?.push([attrs.runs[i + 1], attrs.runs[i + 2]]);
  return attrs.cols.map((col, i) => {
    const [aT, bT] = [inputs[`a${i}`], inputs[`b${i}`]] as tf.TensorInfo[];
    const scale = attrs.scaled[i] ? heapView(wasm, inputs[`s${i}`] as tf.TensorInfo)[0] : 1;
    return { aT, bT, scale, col, r: aT.shape[1], width: bT.shape[1], runs: runs[i] };
  });
}

/** Ascending rows as runs of consecutive ones, [from, to). */
function runsOf(rows: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const row of rows) {
    const last = runs[runs.length - 1];
    if (last && last[1] === row) last[1] = row + 1;
    else runs.push([row, row + 1]);
  }
  return runs;
}

/** A new tensor holding `source`'s data. */
function copyOf(wasm: WasmBackendInternals, source: tf.TensorInfo): tf.TensorInfo {
  const out = wasm.makeOutput(source.shape, 'float32');
  heapView(wasm, out).set(heapView(wasm, source));
  return out;
}

tf.registerKernel({
  kernelName: FORWARD,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const wasm = backend as unknown as WasmBackendInternals;
    const { x, y } = inputs as Record<'x' | 'y', tf.TensorInfo>;
    const out = copyOf(wasm, y);
    addDeltasInPlace(wasm, x, out, partInputs(inputs, attrs as Attrs, wasm));
    return out;
  },
});

/**
 * y [M, N] += every part's delta from x [M, K] on its rows, in place, y and x in tfjs-wasm's
 * heap. A run of rows is a product of its own; the kernel sums each output in the same order
 * whatever the rows beside it, so a row gets the same bits in any run.
 */
function addDeltasInPlace(wasm: WasmBackendInternals, x: tf.TensorInfo, y: tf.TensorInfo, parts: KernelPart[]): void {
  const kernels = kernelsFor(wasm) as LoraKernels;
  const [M, K] = x.shape;
  const N = y.shape[1];
  const h = wasm.makeOutput([M, Math.max(...parts.map((p) => p.r))], 'float32');
  try {
    const at = (t: tf.TensorInfo) => heapOffset(wasm, t);
    for (const p of parts) {
      for (const [from, to] of p.runs ?? [[0, M]]) {
        kernels.loraForward(at(x) + 4 * from * K, at(p.aT), at(p.bT), p.scale, at(y) + 4 * from * N, to - from, K, p.r, p.width, N, p.col, at(h));
      }
    }
  } finally {
    wasm.disposeData(h.dataId);
  }
}

/**
 * addLoraDeltas for a kernel that runs several steps on tfjs-wasm's memory within one call
 * (kernels/decode-block.ts): y [M, N] (the frozen product of x [M, K], both tensor data in the
 * heap) gets every part's delta added in place, with the same bits as addLoraDeltas. Check
 * loraKernelsApply first.
 */
export function addLoraDeltasInPlace(wasm: WasmBackendInternals, x: tf.TensorInfo, y: tf.TensorInfo, parts: LoraPart[]): void {
  if (parts.length === 0) return;
  const scaleOf = (p: LoraPart) => (p.scale ? heapView(wasm, p.scale)[0] : 1);
  addDeltasInPlace(
    wasm,
    x,
    y,
    parts.map((p) => ({ aT: p.aT, bT: p.bT, scale: scaleOf(p), col: p.col, r: p.aT.shape[1], width: p.width, runs: p.rows ? runsOf(p.rows) : null })),
  );
}

/** Each part's gradient outputs in order, daT [K, r] then dbT [r, width]. */
function factorGradientOutputs(wasm: WasmBackendInternals, parts: KernelPart[], K: number): tf.TensorInfo[] {
  return parts.flatMap((p) => [wasm.makeOutput([K, p.r], 'float32'), wasm.makeOutput([p.r, p.width], 'float32')]);
}

tf.registerKernel({
  kernelName: BACKWARD,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const wasm = backend as unknown as WasmBackendInternals;
    const kernels = kernelsFor(backend) as LoraKernels;
    const { x, dy } = inputs as Record<'x' | 'dy', tf.TensorInfo>;
    const [M, K] = x.shape;
    const parts = partInputs(inputs, attrs as Attrs, wasm);
    // The adapters' share of dx, summed from zero (the kernel adds each part's into it).
    const dxOut = wasm.makeOutput([M, K], 'float32');
    heapView(wasm, dxOut).fill(0);
    const grads = factorGradientOutputs(wasm, parts, K);
    const r = Math.max(...parts.map((p) => p.r));
    const [h, dh, a] = [wasm.makeOutput([M, r], 'float32'), wasm.makeOutput([M, r], 'float32'), wasm.makeOutput([r, K], 'float32')];
    try {
      const at = (t: tf.TensorInfo) => heapOffset(wasm, t);
      parts.forEach((p, i) => {
        kernels.loraBackward(at(x), at(dy), at(p.aT), at(p.bT), p.scale, at(dxOut), at(grads[2 * i]), at(grads[2 * i + 1]), M, K, p.r, p.width, dy.shape[1], p.col, at(h), at(dh), at(a));
      });
    } finally {
      [h, dh, a].forEach((t) => wasm.disposeData(t.dataId));
    }
    return [dxOut, ...grads];
  },
});

/**
 * Whether the kernels take these parts over x [M, K]: the wasm backend, float32 throughout,
 * and K, every rank and every part's width multiples of 4 (the kernels' vectors).
 */
export function loraKernelsApply(x: tf.Tensor2D, parts: LoraPart[]): boolean {
  if (parts.length === 0 || tf.getBackend() !== 'wasm' || kernelsFor(tf.backend()) === null) return false;
  if (x.dtype !== 'float32' || x.shape[1] % 4 !== 0) return false;
  return parts.every((p) => p.aT.dtype === 'float32' && p.bT.dtype === 'float32' && p.aT.shape[1] % 4 === 0 && p.width % 4 === 0 && (p.scale === null || p.scale.dtype === 'float32'));
}

function kernelInputs(parts: LoraPart[], named: tf.NamedTensorMap): { inputs: tf.NamedTensorMap; attrs: Attrs } {
  const inputs = { ...named };
  parts.forEach((p, i) => {
    inputs[`a${i}`] = p.aT;
    inputs[`b${i}`] = p.bT;
    if (p.scale) inputs[`s${i}`] = p.scale;
  });
  const runs = parts.flatMap((p, i) => (p.rows ? runsOf(p.rows).flatMap(([from, to]) => [i, from, to]) : []));
  return { inputs, attrs: { cols: parts.map((p) => p.col), scaled: parts.map((p) => p.scale !== null), routed: parts.map((p) => p.rows !== undefined), runs } };
}

/** y + every part's delta on its columns, y [M, N] the frozen product of x [M, K]. Check loraKernelsApply first. */
export function addLoraDeltas(y: tf.Tensor2D, x: tf.Tensor2D, parts: LoraPart[]): tf.Tensor2D {
  const { inputs, attrs } = kernelInputs(parts, { x, y });
  return tf.engine().runKernel(FORWARD, inputs, attrs) as tf.Tensor2D;
}

/**
 * The backward pass through the parts, given x [M, K] and dy [M, N]: the adapters' share of
 * the input gradient dx [M, K] (the frozen projection's own is added by the caller: it needs
 * none of this, so the two can be computed at once), and each part's [daT, dbT] in order.
 * Check loraKernelsApply first.
 */
export function loraGradients(x: tf.Tensor2D, dy: tf.Tensor2D, parts: LoraPart[]): { dx: tf.Tensor2D; grads: tf.Tensor2D[] } {
  if (parts.some((p) => p.rows)) throw new Error('loraGradients: adapters routed to some rows are for serving, not training');
  const { inputs, attrs } = kernelInputs(parts, { x, dy });
  const [dxOut, ...grads] = tf.engine().runKernel(BACKWARD, inputs, attrs) as tf.Tensor2D[];
  return { dx: dxOut, grads };
}

/**
 * What the kernel being run multiplies by (objects, which tfjs's attributes cannot carry: set
 * just before the call): the projection's packed weights and plan.
 */
let current: { packed: PackedWeights; plan: MatMulPlan } | null = null;

/** The parts as the threads take them: their factors as views of tfjs's heap. */
function threadedParts(wasm: WasmBackendInternals, parts: KernelPart[]): ThreadedLoraPart[] {
  return parts.map((p) => ({ aT: heapView(wasm, p.aT), bT: heapView(wasm, p.bT), scale: p.scale, col: p.col, r: p.r, width: p.width }));
}

tf.registerKernel({
  kernelName: PROJECTION,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const wasm = backend as unknown as WasmBackendInternals;
    const { x, bias } = inputs as Record<'x', tf.TensorInfo> & { bias?: tf.TensorInfo };
    const { packed, plan } = current as NonNullable<typeof current>;
    const [M, K] = x.shape;
    const N = packed.outFeatures;
    const out = wasm.makeOutput([M, N], 'float32');
    const parts = partInputs(inputs, attrs as Attrs, wasm);
    const threaded = packed.threaded;
    if (threaded) {
      const args = { x: heapView(wasm, x), packed: threaded.offset, bias: bias ? heapView(wasm, bias) : null, out: heapView(wasm, out), M, K, N };
      threaded.threads.run({ ...args, ...matMulAttrs(packed, M, plan), lora: threadedParts(wasm, parts) });
    } else {
      // The frozen product straight into out, the deltas added there: no copy of it.
      packedMatMulInto(wasm, x, packed, bias ?? null, out, plan);
      addDeltasInPlace(wasm, x, out, parts);
    }
    return out;
  },
});

tf.registerKernel({
  kernelName: THREADED_BACKWARD,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const wasm = backend as unknown as WasmBackendInternals;
    const { x, dy } = inputs as Record<'x' | 'dy', tf.TensorInfo>;
    const { packed } = current as NonNullable<typeof current>;
    const threaded = packed.threaded as NonNullable<PackedWeights['threaded']>;
    const [M, K] = x.shape;
    const N = packed.outFeatures;
    const parts = partInputs(inputs, attrs as Attrs, wasm);
    const dx = wasm.makeOutput([M, K], 'float32');
    const grads = factorGradientOutputs(wasm, parts, K);
    threaded.threads.runLoraInputGradient({
      dy: heapView(wasm, dy),
      x: heapView(wasm, x),
      packed: threaded.offset,
      dx: heapView(wasm, dx),
      M,
      K,
      N,
      lora: threadedParts(wasm, parts),
      grads: parts.map((_, i) => ({ daT: heapView(wasm, grads[2 * i]), dbT: heapView(wasm, grads[2 * i + 1]) })),
    });
    return [dx, ...grads];
  },
});

/** runKernel's call of a kernel that multiplies by `packed` under `plan` (`current` set for it). */
function multiplyingBy<T>(packed: PackedWeights, plan: MatMulPlan, call: () => T): T {
  current = { packed, plan };
  try {
    return call();
  } finally {
    current = null;
  }
}

/**
 * x W (+ bias) with every part's delta added, x [M, K], W packed by packWeights, in one kernel
 * call: the same bits as addLoraDeltas over packedMatMul's product, without a copy of the
 * product; on the matmul threads, with the deltas divided between them too, where the panels
 * are there. Null where packedMatMul or loraKernelsApply would not apply, while a gradient is
 * being recorded, or for parts routed to some rows.
 */
export function projectWithLora(x: tf.Tensor2D, packed: PackedWeights, bias: tf.Tensor1D | null, plan: MatMulPlan, parts: LoraPart[]): tf.Tensor2D | null {
  if (x.shape[0] === 0 || tf.engine().isTapeOn() || parts.some((p) => p.rows) || !loraKernelsApply(x, parts)) return null;
  if ((bias && bias.dtype !== 'float32') || x.shape[1] !== packed.inFeatures) return null;
  const { inputs, attrs } = kernelInputs(parts, bias ? { x, bias } : { x });
  return multiplyingBy(packed, plan, () => tf.engine().runKernel(PROJECTION, inputs, attrs) as tf.Tensor2D);
}

/**
 * Matmul threads from which an adapted projection's backward pass is divided between them
 * (loraGradientsOnThreads). Below, the calling thread computes the adapters' gradients while
 * the helpers compute the frozen dx (packedMatMulTransposedAlongside), with no copy of x nor
 * wait between steps: on two threads a 64-token step of SmolLM2-135M took 0.65-0.81 s that
 * way against 0.68-0.84 s divided (medians of four alternating pairs of processes). The
 * calling thread's share does not shrink with more helpers: on 16 threads its LoRA backward
 * took 3.1 s of a 2,048-token step against 0.8 s for every frozen dx (docs/benchmarks.md,
 * "LoRA on the matmul threads").
 */
export const DIVIDED_BACKWARD_THREADS = 3;

/**
 * The whole backward pass of an adapted projection whose panels are on DIVIDED_BACKWARD_THREADS
 * matmul threads or more: dx [M, K] = dy W^T plus the adapters' share, and each part's [daT,
 * dbT] in order, divided between the threads in one call; the same bits as
 * packedMatMulTransposed's dx plus loraGradients' share. Null where those do not apply, the
 * panels are in tfjs's heap or on fewer threads.
 */
export function loraGradientsOnThreads(x: tf.Tensor2D, dy: tf.Tensor2D, packed: PackedWeights, parts: LoraPart[]): { dx: tf.Tensor2D; grads: tf.Tensor2D[] } | null {
  if (!packed.threaded || packed.threaded.threads.threads < DIVIDED_BACKWARD_THREADS) return null;
  if (parts.some((p) => p.rows) || !loraKernelsApply(x, parts) || !transposedKernelApplies(dy, packed)) return null;
  const { inputs, attrs } = kernelInputs(parts, { x, dy });
  const [dx, ...grads] = multiplyingBy(packed, DEFAULT_MATMUL_PLAN, () => tf.engine().runKernel(THREADED_BACKWARD, inputs, attrs) as tf.Tensor2D[]);
  return { dx, grads };
}
