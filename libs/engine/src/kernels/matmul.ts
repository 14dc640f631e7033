import * as tf from '@tensorflow/tfjs-core';
import { defaultMatMulPlanStore, MatMulPlanStore } from './matmul-plan-store';
import { MatmulKernels, matmulExportName, MatMulThreads, prepareRows, readsRowScratch } from './matmul-threads';
import { MATMUL_WASM } from './matmul.wasm';
import { heapOffset, heapView, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';

/**
 * The model's projections, x [M, K] W [K, N] (+ bias), as one WebAssembly SIMD kernel on
 * tfjs-wasm (source, with the why of its layout: libs/engine/assembly/matmul.ts). It is at
 * least as fast as XNNPACK's matMul for every row count, decode and prefill alike
 * (bench/matmul.bench.ts; docs/benchmarks.md, "Matmul kernel"), so inference uses it for
 * all of them, and an inference process never has XNNPACK pack the weights a second time
 * (see FrozenLinear).
 *
 * W is first rearranged into panels of 8 columns (packWeights), once, into a tensor in
 * tfjs-wasm's heap: as large as W, or half as large when every weight of W is exactly a
 * bfloat16 (a checkpoint stored in bf16), which the kernel then reads as such, with the same
 * result to the bit and fewer bytes to stream, which bounds one row (see the source's
 * section 1). Like the decode-attention kernel, both steps are tfjs kernels for the wasm backend
 * that run on tfjs's own memory (the module imports the backend's WebAssembly.Memory and
 * is given the heap offsets of the tensors: wasm-heap.ts); where tfjs-wasm does not expose
 * them every function here returns null so the caller uses tfjs ops.
 *
 * The kernel can read each group of panels in a pass of its own before multiplying it
 * (read-ahead: the source's section 5), and can run a single row down one panel at a time or
 * four (section 2). Which is faster depends on the machine and the weights, not on the
 * result, which is the same to the bit: each call takes a MatMulPlan, which a loaded model
 * holds for its own weights (LlamaModel.matmulPlan), chosen by tuneMatMul timing the
 * variants on them.
 *
 * For serving, packWeights can also quantize W to 8 bits (format 'q8': blocks of 32 int8
 * weights along k with one scale each, the Q8_0 layout; the source's section 8): x is then
 * quantized the same way per call and the products are integer dot products, about a quarter
 * of the f32 bytes to stream. Unlike bf16, q8 changes the result (docs/benchmarks.md gives
 * the bound measured on logits and logprobs); training never uses it.
 *
 * With startMatMulThreads(n), weights packed from then on are kept outside tfjs's heap, once,
 * in a memory that n threads share, and every product over them is divided between the
 * threads (matmul-threads.ts): the same bits again. Training's input gradients over f32 panels
 * there run on the same threads (matmul-transposed.ts).
 */
const MATMUL_KERNEL = 'TrainyardPackedMatMul';
const THREADED_MATMUL_KERNEL = 'TrainyardThreadedMatMul';
const PACK_KERNEL = 'TrainyardPackPanels';
const SPLIT_KERNEL = 'TrainyardSplitColumns';

/** Columns per panel of the packed layout. */
const PANEL = 8;
/** Weights per q8 block along k, and float32s a q8 panel block takes (288 bytes: the source's section 8). */
const Q8_BLOCK = 32;
const Q8_BLOCK_FLOATS = 72;

/** How panels hold the weights: f32, bf16 (the same values, half the bytes) or q8 (quantized to 8 bits). */
export type PanelFormat = 'f32' | 'bf16' | 'q8';

interface Kernels extends MatmulKernels {
  isBf16(w: number, count: number): number;
  pack(w: number, packed: number, K: number, N: number, bf16: number, paired: number): void;
  packQ8(w: number, packed: number, K: number, N: number): void;
  copyColumns(x: number, out: number, M: number, N: number, from: number, width: number): void;
}

interface SplitAttrs extends tf.NamedAttrMap {
  sizes: number[];
}

/** The kernels' attributes: how the panels hold the weights, and whether they are interleaved in pairs (the source's section 9). */
interface PanelAttrs extends tf.NamedAttrMap {
  format: PanelFormat;
  paired: boolean;
}

interface MatMulAttrs extends PanelAttrs {
  readAhead: boolean;
  oneRowWide: boolean;
}

interface ThreadedMatMulAttrs extends MatMulAttrs {
  /** Where the panels are in the threads' memory. */
  offset: number;
  N: number;
}

/**
 * How a single row runs (the kernel source's section 2): one panel at a time (1 x 8 tiles),
 * or four (1 x 32); or, over weights packed in pairs (section 9), a pair at a time (1 x 16),
 * the only tile there.
 */
export type OneRowTile = 'narrow' | 'wide' | 'paired';

/**
 * How packedMatMul runs over one model's weights. Every plan gives the same products to the
 * bit; which is fastest depends on the machine's memory system and the weights' sizes and
 * format, so tuneMatMul times them on the weights a plan is for.
 */
export interface MatMulPlan {
  /** One row: decoding one sequence. */
  oneRowTile: OneRowTile;
  /** Whether each group of panels is read before it is multiplied (section 5), for one row. */
  oneRowReadAhead: boolean;
  /** The same for two rows and more: a decode batch, a prefill. */
  rowsReadAhead: boolean;
}

/**
 * The plan of weights not tuned: streamed, and four panels at a time for one row. Models too
 * small to be tuned run from cache, where the two one-row tiles run alike (14.2 against 14.7
 * ms, narrow against wide, on AMD Zen 4 for a 576 x 576 weight again and again, as many
 * multiply-adds as a whole SmolLM2-135M).
 */
export const DEFAULT_MATMUL_PLAN: Readonly<MatMulPlan> = Object.freeze({ oneRowTile: 'wide', oneRowReadAhead: false, rowsReadAhead: false });
/** The threads products are divided between (startMatMulThreads), or null: one thread, weights in tfjs's heap. */
let threads: MatMulThreads | null = null;

/** The kernels instantiated on this backend's memory, or null when the backend does not expose it. */
function kernelsFor(backend: object): Kernels | null {
  return instantiateOnHeap(MATMUL_WASM, backend) as Kernels | null;
}

tf.registerKernel({
  kernelName: PACK_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { w } = inputs as Record<'w', tf.TensorInfo>;
    const { format, paired } = attrs as PanelAttrs;
    const wasm = backend as unknown as WasmBackendInternals;
    const [K, N] = w.shape;
    const kernels = kernelsFor(backend) as Kernels;
    if (format === 'q8') {
      const packed = wasm.makeOutput([N / PANEL, K / Q8_BLOCK, Q8_BLOCK_FLOATS], 'float32');
      kernels.packQ8(heapOffset(wasm, w), heapOffset(wasm, packed), K, N);
      return packed;
    }
    const bf16 = format === 'bf16';
    const packed = wasm.makeOutput([N / PANEL, K, bf16 ? PANEL / 2 : PANEL], 'float32');
    kernels.pack(heapOffset(wasm, w), heapOffset(wasm, packed), K, N, bf16 ? 1 : 0, paired ? 1 : 0);
    return packed;
  },
});

tf.registerKernel({
  kernelName: MATMUL_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, packed, bias } = inputs as Record<'x' | 'packed', tf.TensorInfo> & { bias?: tf.TensorInfo };
    const wasm = backend as unknown as WasmBackendInternals;
    const out = wasm.makeOutput([x.shape[0], packed.shape[0] * PANEL], 'float32');
    multiplyInHeap(wasm, x, heapOffset(wasm, packed), bias ?? null, out, attrs as MatMulAttrs);
    return out;
  },
});

tf.registerKernel({
  kernelName: THREADED_MATMUL_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, bias } = inputs as Record<'x', tf.TensorInfo> & { bias?: tf.TensorInfo };
    const { offset, N } = attrs as ThreadedMatMulAttrs;
    const wasm = backend as unknown as WasmBackendInternals;
    const out = wasm.makeOutput([x.shape[0], N], 'float32');
    multiplyOnThreads(wasm, x, offset, bias ?? null, out, attrs as MatMulAttrs);
    return out;
  },
});

/** out [M, N] = x [M, K] times the panels at heap offset `panels` (+ bias), on this thread; out is written. */
function multiplyInHeap(wasm: WasmBackendInternals, x: tf.TensorInfo, panels: number, bias: tf.TensorInfo | null, out: tf.TensorInfo, attrs: MatMulAttrs): void {
  const { format, paired, readAhead, oneRowWide } = attrs;
  const [M, K] = x.shape;
  const N = out.shape[1];
  const kernels = kernelsFor(wasm) as Kernels;
  const matmul = kernels[matmulExportName(format, paired)];
  // Scratch for x's rows as the tiles read them, where they do.
  const xt = readsRowScratch(format, paired, M) ? wasm.makeOutput([M, K], 'float32') : null;
  try {
    if (xt) prepareRows(kernels, format, paired, heapOffset(wasm, x), heapOffset(wasm, xt), M, K);
    matmul(heapOffset(wasm, x), panels, bias ? heapOffset(wasm, bias) : 0, heapOffset(wasm, out), M, K, N, readAhead ? 1 : 0, oneRowWide ? 1 : 0, xt ? heapOffset(wasm, xt) : 0, 0, N / PANEL);
  } finally {
    if (xt) wasm.disposeData(xt.dataId);
  }
}

/** multiplyInHeap for panels at `offset` in the matmul threads' memory, divided between the threads. */
function multiplyOnThreads(wasm: WasmBackendInternals, x: tf.TensorInfo, offset: number, bias: tf.TensorInfo | null, out: tf.TensorInfo, attrs: MatMulAttrs): void {
  const { format, paired, readAhead, oneRowWide } = attrs;
  const [M, K] = x.shape;
  (threads as MatMulThreads).run({
    x: heapView(wasm, x),
    packed: offset,
    bias: bias ? heapView(wasm, bias) : null,
    out: heapView(wasm, out),
    M,
    K,
    N: out.shape[1],
    format,
    paired,
    readAhead,
    oneRowWide,
  });
}

/**
 * packedMatMul for a kernel that runs several steps on tfjs-wasm's memory within one call
 * (kernels/decode-block.ts): x [M, K] and out [M, N] are tensor data in the heap, out is
 * written, and bias is the projection's or null. The same bits as packedMatMul.
 */
export function packedMatMulInto(wasm: WasmBackendInternals, x: tf.TensorInfo, packed: PackedWeights, bias: tf.TensorInfo | null, out: tf.TensorInfo, plan: MatMulPlan): void {
  const attrs = matMulAttrs(packed, x.shape[0], plan);
  if (packed.threaded) multiplyOnThreads(wasm, x, packed.threaded.offset, bias, out, attrs);
  else multiplyInHeap(wasm, x, heapOffset(wasm, packed.panels as tf.Tensor3D), bias, out, attrs);
}

/** How the kernel runs `rows` rows over `packed` under `plan`. */
export function matMulAttrs(packed: PackedWeights, rows: number, plan: MatMulPlan): MatMulAttrs {
  return {
    format: packed.format,
    paired: packed.paired,
    readAhead: rows === 1 ? plan.oneRowReadAhead : plan.rowsReadAhead,
    oneRowWide: plan.oneRowTile === 'wide',
  };
}

tf.registerKernel({
  kernelName: SPLIT_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x } = inputs as Record<'x', tf.TensorInfo>;
    const { sizes } = attrs as SplitAttrs;
    const wasm = backend as unknown as WasmBackendInternals;
    const [M, N] = x.shape;
    const kernels = kernelsFor(backend) as Kernels;
    let from = 0;
    return sizes.map((width) => {
      const out = wasm.makeOutput([M, width], 'float32');
      kernels.copyColumns(heapOffset(wasm, x), heapOffset(wasm, out), M, N, from, width);
      from += width;
      return out;
    });
  },
});

// The split's gradient: the parts' gradients side by side again (zeros for a part the loss
// does not reach), as tf.split's is.
tf.registerGradient({
  kernelName: SPLIT_KERNEL,
  gradFunc: (dy, _saved, attrs) => {
    const { sizes } = attrs as unknown as SplitAttrs;
    const parts = dy as (tf.Tensor | null)[];
    const rows = (parts.find((d) => d !== null) as tf.Tensor).shape[0];
    return { x: () => tf.concat(parts.map((d, i) => d ?? tf.zeros([rows, sizes[i]])), 1) };
  },
});

/**
 * x [M, N] split into column blocks of `sizes` (summing to N), as tf.split(x, sizes, 1) gives
 * them: the parts of a fused projection's output. On the kernel where it runs (with its
 * gradient under a tape), else tf.split.
 */
export function splitColumns(x: tf.Tensor2D, sizes: number[]): tf.Tensor2D[] {
  if (x.dtype !== 'float32' || !matMulKernelAvailable()) return tf.split(x, sizes, 1) as tf.Tensor2D[];
  if (sizes.reduce((a, b) => a + b, 0) !== x.shape[1]) throw new Error(`splitColumns: sizes [${sizes}] do not add up to ${x.shape[1]} columns`);
  const attrs: SplitAttrs = { sizes };
  return tf.engine().runKernel(SPLIT_KERNEL, { x }, attrs) as unknown as tf.Tensor2D[];
}


/** True when packWeights and packedMatMul run the kernels on the current backend. */
export function matMulKernelAvailable(): boolean {
  return tf.getBackend() === 'wasm' && kernelsFor(tf.backend()) !== null;
}

/**
 * A [K, N] weight rearranged for packedMatMul: panels [N/8, K, 8], panels[p][k][j] = W[k][8p + j],
 * as large as the weight itself; or, bf16, [N/8, K, 4] float32 holding the top halves of
 * the same weights, two per float (the kernel source's section 1); or, q8, [N/8, K/32, 72]
 * float32 holding blocks of 8-bit weights and their scales (section 8). f32 and bf16 panels
 * in pairs (`paired`, section 9) hold the same floats with panels 2q and 2q + 1 alternating
 * step by step. They are a tensor in tfjs's heap, or, packed while matmul threads run, a
 * block of the threads' shared memory. Dispose it with the weight.
 */
export class PackedWeights {
  private constructor(
    readonly inFeatures: number,
    readonly outFeatures: number,
    /** How the panels hold the weights. */
    readonly format: PanelFormat,
    private inPairs: boolean,
    /** The panels in tfjs's heap; null when they are in the threads' memory. */
    readonly panels: tf.Tensor3D | null,
    /** Where the panels are in the threads' memory, and which threads; null when in tfjs's heap. */
    readonly threaded: { threads: MatMulThreads; offset: number } | null,
  ) {}

  static inHeap(panels: tf.Tensor3D, format: PanelFormat, paired: boolean, K: number): PackedWeights {
    return new PackedWeights(K, panels.shape[0] * PANEL, format, paired, panels, null);
  }

  /** The panels copied into the threads' memory (and the tensor disposed). */
  static inThreads(panels: tf.Tensor3D, format: PanelFormat, paired: boolean, K: number, owner: MatMulThreads): PackedWeights {
    const view = heapView(tf.backend() as unknown as WasmBackendInternals, panels);
    const offset = owner.store(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
    const N = panels.shape[0] * PANEL;
    panels.dispose();
    return new PackedWeights(K, N, format, paired, null, { threads: owner, offset });
  }

  /** Whether the panels hold the weights as bfloat16 (every weight was exactly one): 4 floats per step, not 8. */
  get bf16(): boolean {
    return this.format === 'bf16';
  }

  /** Whether the panels are interleaved in pairs (the kernel source's section 9). */
  get paired(): boolean {
    return this.inPairs;
  }

  /** Whether the panels can be interleaved in pairs: f32 or bf16, N a multiple of 16. */
  get pairable(): boolean {
    return this.format !== 'q8' && this.outFeatures % (2 * PANEL) === 0;
  }

  /**
   * Re-lays the panels in place, into pairs or back (the kernel's relayPairs): the same
   * products to the bit, in the other layout. Nothing may multiply them meanwhile.
   */
  relay(paired: boolean): void {
    if (paired === this.inPairs) return;
    if (!this.pairable) throw new Error(`PackedWeights: ${this.format} panels of ${this.outFeatures} columns cannot be paired`);
    const { inFeatures: K, outFeatures: N } = this;
    if (this.threaded) {
      this.threaded.threads.relayPairs(this.threaded.offset, K, N, this.bf16, paired);
    } else {
      const wasm = tf.backend() as unknown as WasmBackendInternals;
      const scratch = wasm.makeOutput([2, K, this.bf16 ? PANEL / 2 : PANEL], 'float32');
      try {
        (kernelsFor(wasm) as Kernels).relayPairs(heapOffset(wasm, this.panels as tf.Tensor3D), heapOffset(wasm, scratch), K, N, this.bf16 ? 1 : 0, paired ? 1 : 0);
      } finally {
        wasm.disposeData(scratch.dataId);
      }
    }
    this.inPairs = paired;
  }

  /** Bytes the panels take. */
  get bytes(): number {
    const weights = this.inFeatures * this.outFeatures;
    return this.format === 'q8' ? (weights / Q8_BLOCK) * Q8_BLOCK_FLOATS * 4 / PANEL : weights * (this.bf16 ? 2 : 4);
  }

  dispose(): void {
    this.panels?.dispose();
    this.threaded?.threads.release(this.threaded.offset, this.bytes);
  }
}

/** packWeights' formats: 'auto' and 'f32' keep the weights' values, 'q8' quantizes them. */
export type PackFormat = 'auto' | 'f32' | 'q8';

export interface PackOptions {
  /** While matmul threads run, whether the panels go into their memory (default) or stay in tfjs's heap (a small operand packed for one call). */
  onThreads?: boolean;
  /**
   * Whether f32 and bf16 panels are interleaved in pairs (the kernel source's section 9), for
   * a process that decodes one sequence at a time: its one-row products stream faster, a
   * batch's run a little slower. Only where N is a multiple of 16; q8 panels never are.
   */
  paired?: boolean;
}

/**
 * weightT [K, N] packed for packedMatMul, or null where the kernel does not apply (another
 * backend, not float32, N not a multiple of 8: such weights keep using tf.matMul). With
 * format 'auto', bf16 panels when every weight is exactly a bfloat16, f32 panels otherwise
 * ('f32': always): either way the products are those of weightT. 'q8' quantizes the weights
 * to 8 bits (the source's section 8) where K is a multiple of 32, and packs as 'auto' does
 * otherwise. While matmul threads run, the panels go into their memory (see PackOptions for
 * that and for panels in pairs). The result is kept out of any enclosing tf.tidy: it lives
 * until disposed.
 */
export function packWeights(weightT: tf.Tensor2D, format: PackFormat = 'auto', options: PackOptions = {}): PackedWeights | null {
  if (!matMulKernelAvailable() || weightT.dtype !== 'float32' || weightT.shape[1] % PANEL !== 0) return null;
  const wasm = tf.backend() as unknown as WasmBackendInternals;
  const [K] = weightT.shape;
  const panelFormat: PanelFormat =
    format === 'q8' && K % Q8_BLOCK === 0
      ? 'q8'
      : format !== 'f32' && (kernelsFor(wasm) as Kernels).isBf16(heapOffset(wasm, weightT), weightT.size) === 1
        ? 'bf16'
        : 'f32';
  const paired = (options.paired ?? false) && panelFormat !== 'q8' && weightT.shape[1] % (2 * PANEL) === 0;
  const attrs: PanelAttrs = { format: panelFormat, paired };
  const panels = tf.keep(tf.engine().runKernel(PACK_KERNEL, { w: weightT }, attrs) as tf.Tensor3D);
  return threads && (options.onThreads ?? true) ? PackedWeights.inThreads(panels, panelFormat, paired, K, threads) : PackedWeights.inHeap(panels, panelFormat, paired, K);
}

/**
 * x [M, K] W [K, N] (+ bias [N]) from W packed by packWeights, run as `plan` says (the plan
 * of the model the weights belong to), or null where tf.matMul should run instead: another
 * backend, not float32, or while a gradient is being recorded (the kernel has none). Inference
 * and training get the same products: one arithmetic per panel format (matmulExportName).
 */
export function packedMatMul(
  x: tf.Tensor2D,
  packed: PackedWeights,
  bias: tf.Tensor1D | null = null,
  plan: MatMulPlan = DEFAULT_MATMUL_PLAN,
): tf.Tensor2D | null {
  const [M, K] = x.shape;
  if (M === 0 || !matMulKernelAvailable() || tf.engine().isTapeOn()) return null;
  if (x.dtype !== 'float32' || (bias && bias.dtype !== 'float32')) return null;
  if (K !== packed.inFeatures || (bias && bias.shape[0] !== packed.outFeatures)) {
    throw new Error(`packedMatMul: x [${x.shape}], weight [${packed.inFeatures}, ${packed.outFeatures}] and bias [${bias?.shape ?? ''}] do not fit together`);
  }
  const attrs = matMulAttrs(packed, M, plan);
  const shared = packed.threaded;
  if (shared) {
    if (shared.threads !== threads) throw new Error('packedMatMul: these weights were packed for matmul threads that have been stopped');
    const threadedAttrs: ThreadedMatMulAttrs = { ...attrs, offset: shared.offset, N: packed.outFeatures };
    return tf.engine().runKernel(THREADED_MATMUL_KERNEL, bias ? { x, bias } : { x }, threadedAttrs) as tf.Tensor2D;
  }
  const inputs: tf.NamedTensorMap = bias ? { x, packed: packed.panels as tf.Tensor3D, bias } : { x, packed: packed.panels as tf.Tensor3D };
  return tf.engine().runKernel(MATMUL_KERNEL, inputs, attrs) as tf.Tensor2D;
}

/**
 * From now on, weights that packWeights packs are kept once in a memory that `count` threads
 * share (this one and count - 1 helpers), and every product over them is divided between the
 * threads (matmul-threads.ts), forward and input gradient alike: for a process that decodes
 * or trains on every core of a machine. Weights
 * packed before stay where they are, on one thread. Nothing changes when the kernel does not
 * run here (another backend) or count is 1; a second call with the same count does nothing.
 */
export function startMatMulThreads(count: number): void {
  if (count === 1 || !matMulKernelAvailable() || threads?.threads === count) return;
  if (threads) throw new Error(`matmul threads: already running ${threads.threads}, not ${count}`);
  threads = new MatMulThreads(count);
}

/** The threads products are divided between, or null while products run on one thread (for other kernels that run on them: a prompt's attention). */
export function runningMatMulThreads(): MatMulThreads | null {
  return threads;
}

/** Threads that products are divided between: 1 unless startMatMulThreads started more. */
export function matMulThreads(): number {
  return threads?.threads ?? 1;
}

/** Stops the matmul threads: weights packed for them can no longer be multiplied (for tests and shutdown). */
export async function stopMatMulThreads(): Promise<void> {
  const stopping = threads;
  threads = null;
  await stopping?.close();
}

/** The plan in words, for logs and benchmark reports. */
export function describeMatMulPlan(choice: MatMulPlan): string {
  const onOff = (on: boolean) => (on ? 'on' : 'off');
  return `one sequence: ${choice.oneRowTile} tile, read-ahead ${onOff(choice.oneRowReadAhead)}; batches: read-ahead ${onOff(choice.rowsReadAhead)}`;
}

/** Weights smaller than this fit in some machine's caches: timing them says nothing about streaming. */
const TUNE_MIN_BYTES = 64 << 20;
/** Timing stops adding weights past this, to bound the time it takes on large models. */
const TUNE_MAX_BYTES = 256 << 20;
/** Passes per row count and candidate plan, alternating; the fastest of each counts. */
const TUNE_ROUNDS = 3;

/**
 * Plans already timed in this process, by the shapes and formats of the weights timed and
 * the settings fixed: a model loaded again, or another checkpoint of the same base, takes
 * the plan measured for the first without timing it again.
 */
const tunedPlans = new Map<string, MatMulPlan>();

/** Plans timed by any process on this machine (matmul-plan-store.ts); tuneMatMul's `store` option replaces it. */
let machinePlans: MatMulPlanStore | null = null;

export interface TuneOptions {
  /**
   * Whether timing may also try pairable weights re-laid in pairs (the kernel source's
   * section 9) and keep them so: only for weights that no transposed product reads (a model
   * loaded for inference only). Default false.
   */
  mayPair?: boolean;
  /** Where plans timed on this machine are kept and found (default: defaultMatMulPlanStore()); null: this process only. */
  store?: MatMulPlanStore | null;
}

/**
 * The plan for packedMatMul over `weights` (a model's projections, in order): what `fixed`
 * sets, and for the rest the fastest when timed on the weights (up to TUNE_MAX_BYTES), for 1
 * row (the one-row tile and read-ahead: up to 4 candidates) and then for 4, a decode batch
 * (read-ahead or not): up to 18 passes, 0.4 s on SmolLM2-135M on an AMD Zen 4. With
 * `mayPair` and the one-row tile open, the timed weights are then re-laid in pairs and timed
 * again (12 passes more), and all the pairable weights stay in pairs when that takes less
 * time for one row times the time for 4 rows: pairs speed one sequence up more than they
 * slow a batch down (bf16 weights on AMD's Zen 4 and Zen 5; not f32 weights, whose batches
 * pay a third, nor where one row is slower in pairs, as on some Intel Xeons); else they go
 * back as they were. Weights of the same shapes and formats as weights timed before on this
 * machine, by this process or another (with the same fixed settings; `store`,
 * matmul-plan-store.ts), get that plan, and that layout, again without timing: the choice is
 * the same in every process on one machine. Where the kernel does not run, or the weights are too small to stream from memory,
 * the rest is DEFAULT_MATMUL_PLAN's. Weights packed in pairs have one one-row tile, 'paired',
 * whatever `fixed` says; with `fixed` one-row tile 'paired', every pairable weight is re-laid
 * in pairs first (only for weights no transposed product reads). The caller keeps the returned
 * plan with the weights.
 */
export function tuneMatMul(weights: PackedWeights[], fixed: Partial<MatMulPlan> = {}, { mayPair = false, store = (machinePlans ??= defaultMatMulPlanStore()) }: TuneOptions = {}): MatMulPlan {
  if (weights.some((w) => w.paired)) fixed = { ...fixed, oneRowTile: 'paired' };
  if (fixed.oneRowTile === 'paired') relayPairable(weights, true);
  const untimed: MatMulPlan = { ...DEFAULT_MATMUL_PLAN, ...fixed };
  if (!matMulKernelAvailable()) return untimed;
  const timed: PackedWeights[] = [];
  let bytes = 0;
  for (const w of weights) {
    if (bytes >= TUNE_MAX_BYTES) break;
    timed.push(w);
    bytes += w.bytes;
  }
  if (bytes < TUNE_MIN_BYTES) return untimed;
  const pairing = mayPair && fixed.oneRowTile === undefined && timed.some((w) => w.pairable);
  const key = JSON.stringify([untimed, Object.keys(fixed).sort(), pairing, timed.map((w) => [w.inFeatures, w.outFeatures, w.format, w.paired, w.threaded ? w.threaded.threads.threads : 1])]);
  const known = tunedPlans.get(key) ?? store?.get(key);
  if (known) {
    tunedPlans.set(key, known);
    if (known.oneRowTile === 'paired') relayPairable(weights, true);
    return { ...known };
  }
  const apart = timePlans(timed, fixed, untimed, ['narrow', 'wide'], pairing);
  let choice = apart.plan;
  if (pairing) {
    relayPairable(timed, true);
    const pairs = timePlans(timed, fixed, untimed, ['paired'], true);
    if (pairs.oneRowMs * pairs.rowsMs < apart.oneRowMs * apart.rowsMs) {
      relayPairable(weights, true);
      choice = pairs.plan;
    } else {
      relayPairable(timed, false);
    }
  }
  tunedPlans.set(key, choice);
  store?.set(key, choice);
  return { ...choice };
}

/** Every pairable weight of `weights` re-laid into pairs, or back. */
function relayPairable(weights: PackedWeights[], paired: boolean): void {
  for (const w of weights) if (w.pairable) w.relay(paired);
}

/**
 * The fastest plan over `weights` as they are laid out: for one row among `tiles` (unless
 * fixed) with read-ahead on and off (unless fixed), then for 4 rows with read-ahead on and
 * off (unless fixed); with the best times of each, which are timed even for a single
 * candidate when `compared` (with another layout).
 */
function timePlans(weights: PackedWeights[], fixed: Partial<MatMulPlan>, untimed: MatMulPlan, tiles: OneRowTile[], compared: boolean): { plan: MatMulPlan; oneRowMs: number; rowsMs: number } {
  const open = <T>(value: T | undefined, all: T[]): T[] => (value === undefined ? all : [value]);
  const oneRow = fastest(
    weights,
    1,
    open(fixed.oneRowTile, tiles).flatMap((oneRowTile) => open(fixed.oneRowReadAhead, [false, true]).map((oneRowReadAhead) => ({ ...untimed, oneRowTile, oneRowReadAhead }))),
    compared,
  );
  const rows = fastest(
    weights,
    4,
    open(fixed.rowsReadAhead, [false, true]).map((rowsReadAhead) => ({ ...oneRow.plan, rowsReadAhead })),
    compared,
  );
  return { plan: rows.plan, oneRowMs: oneRow.ms, rowsMs: rows.ms };
}

/**
 * The candidate under which packedMatMul of `rows` rows over all of `weights` is fastest, with
 * its time (best of TUNE_ROUNDS); a single candidate is timed only when `compared`.
 */
function fastest(weights: PackedWeights[], rows: number, candidates: MatMulPlan[], compared: boolean): { plan: MatMulPlan; ms: number } {
  if (candidates.length === 1 && !compared) return { plan: candidates[0], ms: NaN };
  const inputs = new Map<number, tf.Tensor2D>();
  for (const w of weights) if (!inputs.has(w.inFeatures)) inputs.set(w.inFeatures, tf.ones([rows, w.inFeatures]));
  const best = candidates.map(() => Infinity);
  try {
    for (let round = 0; round < TUNE_ROUNDS; round++) {
      candidates.forEach((candidate, i) => {
        const start = performance.now();
        for (const w of weights) (packedMatMul(inputs.get(w.inFeatures) as tf.Tensor2D, w, null, candidate) as tf.Tensor2D).dispose();
        best[i] = Math.min(best[i], performance.now() - start);
      });
    }
  } finally {
    for (const x of inputs.values()) x.dispose();
  }
  const ms = Math.min(...best);
  return { plan: candidates[best.indexOf(ms)], ms };
}
