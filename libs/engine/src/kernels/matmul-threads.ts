import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import './wasm-features';
import type { PanelFormat } from './matmul';
import type { AttentionKernels } from './attention-kernels';
import { ATTENTION_SHARED_WASM } from './attention.wasm';
import { LORA_SHARED_WASM } from './lora.wasm';
import { MATMUL_SHARED_WASM } from './matmul.wasm';
import { MATMUL_TRANSPOSED_SHARED_WASM } from './matmul-transposed.wasm';

/**
 * The matmul kernel on several threads, over one copy of the weights.
 *
 * Decoding one sequence is bound by reading the weights, all of them every step, and one core
 * reads memory at only part of what the machine can. A process that divides every product
 * between its cores decodes a stream faster, prefills faster, and holds the weights once
 * instead of once per worker process (docs/benchmarks.md, "Matmul on several threads").
 *
 * tfjs-wasm's heap is not shared between threads, so the packed weights live here, in a
 * shared WebAssembly.Memory of the engine's own (the Arena below), and every thread
 * instantiates the same kernel modules (the kernel sources compiled for a shared memory:
 * MATMUL_SHARED_WASM, MATMUL_TRANSPOSED_SHARED_WASM, ATTENTION_SHARED_WASM, LORA_SHARED_WASM)
 * on it. The helper threads run matmul-threads.worker.ts.
 * Two kinds of product run on the same panels:
 *   - the forward product out = x W (+ bias) (run), divided by panels of 8 output columns:
 *     each chunk is a contiguous range of them;
 *   - training's input gradient dx = dy W^T (runTransposed), divided by ranges of k, rows of
 *     W and columns of dx, in multiples of 4: each chunk reads only its rows of every panel
 *     and writes only its columns of dx.
 * Either way every output is one tile's sum in the same order whichever thread computes it,
 * so the result is the same bits as on one thread. A long prompt's attention
 * (runPromptAttention: a prefill's, a training step's forward pass) runs on the same threads
 * between the products, divided by tiles of 4 query rows of one KV head, each computed alone;
 * and its gradient (runAttentionBackward), divided by KV heads, each head's dk and dv summed
 * over its tokens by one thread: the same bits again. A training projection's LoRA adapters
 * run there too (libs/engine/assembly/lora.ts): their deltas right after its frozen product,
 * on the copies already made, divided by rows (run's `lora`); and, on enough threads
 * (lora.ts's DIVIDED_BACKWARD_THREADS), its whole backward pass with the frozen dx
 * (runLoraInputGradient): h, dh and dx by rows, the factors' gradients by their rows and
 * columns.
 *
 * One product, from the calling thread:
 *   1. copy the input (x and the bias, or dy; or q, k, v and the mask) from tfjs's heap into
 *      this memory and lay it out as the tiles read it, once (x's rows interleaved, or dy
 *      transposed);
 *   2. publish the call in the control block and wake the helpers;
 *   3. take chunks of the product (ranges of whole units, large first and smaller towards the
 *      end) from a shared counter, as the helpers do, until none is left, then wait until
 *      every chunk is done;
 *   4. copy the output back into tfjs's heap.
 * Chunks rather than one fixed share per thread, because a helper starts late whenever it
 * was asleep (a wake takes a fraction of a millisecond, a product of a training step about
 * one) or was descheduled on a busy machine: the others take its chunks meanwhile, and a
 * product waits at most for one small chunk in progress, not for a whole share
 * (docs/benchmarks.md, "Matmul on several threads").
 * The copies are small next to the weights (a few rows, or a training step's tokens). Helpers spin on the
 * control block between products: a decode step of SmolLM2-135M makes 121 of them, a
 * fraction of a millisecond apart, and waking a sleeping thread for each would add its
 * latency to every one. After SPIN_MS without a product they sleep in Atomics.wait.
 * Training's products come further apart (most find the helpers asleep), but a longer spin
 * takes the core from the calling thread's own work in between, which cost more than the
 * wakes on a 2-core machine busy with other jobs (docs/benchmarks.md, "Training step").
 */

/** How long a helper spins for the next product before it sleeps (it then wakes on the next one, later). */
const SPIN_MS = 2;

/** Slots of the control block, an Int32Array over a SharedArrayBuffer (the helpers get the same object). */
const SLOT = {
  /**
   * Twice the count of products published so far: even while the current product's
   * arguments are readable, odd while the caller writes the next one's. Helpers wait for it
   * to change to another even value.
   */
  Generation: 0,
  /** Helpers at work on the current product: the caller writes the next one's arguments only once none is. */
  Active: 1,
  /** 1 once a helper failed: the product's result is not to be trusted. */
  Failed: 2,
  /** 1 when the helpers are to exit. */
  Stop: 3,
  /**
   * The product's arguments (up to 16, before the range): matmulF32's from x to xt,
   * matmulTransposedF32's from packed to acc, promptAttention's from q to stride, or
   * attentionBackward's from q to maskRows. Then which export runs them (its index in PRODUCTS).
   */
  Args: 4,
  Product: 20,
  /** The product is `Units` units of `Unit` (panels, rows of k, attention tiles or KV heads); a thread takes 1 / `Divisor` of the units left at a time. */
  Units: 21,
  Unit: 22,
  Divisor: 23,
  /** The first unit not yet taken, and how many units are done. */
  Next: 24,
  Finished: 25,
} as const;

/**
 * A thread takes 1 / (CHUNK_DIVISOR x threads) of a product's units left at a time: large
 * chunks first, while every thread has work ahead, smaller ones towards the end, so that the
 * threads finish close together (guided scheduling, as OpenMP's schedule(guided)).
 */
const CHUNK_DIVISOR = 2;

/**
 * Every export a product can run, as the control block's Product slot names it (an index
 * here): in which module it is (0 the matmul kernel, 1 the transposed one, 2 the attention
 * kernel) and how many of the Args slots it takes before the range. Every export is called as
 * (...args, from, to, thread), thread 0 being the caller's: the attention kernels read the
 * thread (its own block of scratch), the products ignore the extra argument. The caller and the
 * helpers read this one table.
 */
const PRODUCTS = [
  { module: 0, name: 'matmulF32Fused', arity: 10 },
  { module: 0, name: 'matmulBf16Fused', arity: 10 },
  { module: 0, name: 'matmulF32PairedFused', arity: 10 },
  { module: 0, name: 'matmulBf16PairedFused', arity: 10 },
  { module: 0, name: 'matmulQ8', arity: 10 },
  { module: 1, name: 'matmulTransposedF32', arity: 7 },
  { module: 2, name: 'promptAttention', arity: 14 },
  { module: 2, name: 'attentionBackward', arity: 16 },
  { module: 3, name: 'loraForwardRows', arity: 7 },
  { module: 3, name: 'adaptedBackwardFirst', arity: 12 },
  { module: 3, name: 'adaptedBackwardSecond', arity: 9 },
] as const;

const productIndex = (name: (typeof PRODUCTS)[number]['name']) => PRODUCTS.findIndex((product) => product.name === name);

/** What each helper thread (matmul-threads.worker.ts) is given as its workerData. */
export interface HelperData {
  memory: SharedMemory;
  /** The kernel modules, compiled for a shared memory, that PRODUCTS' `module` indexes. */
  modules: object[];
  productTable: typeof PRODUCTS;
  /** The control block's buffer (SLOT). */
  control: SharedArrayBuffer;
  spinMs: number;
  slots: typeof SLOT;
  /** 1 to threads - 1: the block of scratch the attention kernels give it. */
  thread: number;
}

/**
 * The helpers' script: matmul-threads.worker.ts beside this module in the sources (jest,
 * tsx), or matmul-threads.worker.js beside the bundle that holds this module (an app's
 * main.js: tools/webpack makes it an entry of the app's own).
 */
function helperScript(): string {
  const script = ['matmul-threads.worker.js', 'matmul-threads.worker.ts'].map((name) => join(__dirname, name)).find((path) => existsSync(path));
  if (!script) throw new Error(`matmul threads: no matmul-threads.worker.js or .ts beside ${__dirname} (a bundle must hold it as an entry: tools/webpack)`);
  return script;
}

/** The part of the WebAssembly JS API used here and by the helpers (the project's TypeScript lib is es2022, without the DOM's declarations). */
export interface SharedMemory {
  readonly buffer: SharedArrayBuffer;
  grow(pages: number): number;
}
export interface WebAssemblyApi {
  Memory: new (descriptor: { initial: number; maximum: number; shared: true }) => SharedMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
}
declare const WebAssembly: WebAssemblyApi;

/** matmulF32, matmulBf16, matmulQ8 and the fused matmulF32Fused and matmulBf16Fused (and their paired copies) of the kernel (libs/engine/assembly/matmul.ts). */
type MatmulExport = (x: number, packed: number, bias: number, out: number, M: number, K: number, N: number, readAhead: number, oneRowWide: number, xt: number, panelFrom: number, panelTo: number) => void;

/** The matmul kernel's exports that multiply, and the re-laying of panels: what both its builds, on tfjs's heap and on a shared memory, are called for. */
export interface MatmulKernels {
  interleaveRows(x: number, xt: number, M: number, K: number): void;
  quantizeRows(x: number, xq: number, M: number, K: number): void;
  relayPairs(packed: number, scratch: number, K: number, N: number, bf16: number, toPairs: number): void;
  matmulF32: MatmulExport;
  matmulBf16: MatmulExport;
  matmulQ8: MatmulExport;
  matmulF32Fused: MatmulExport;
  matmulBf16Fused: MatmulExport;
  matmulF32PairedFused: MatmulExport;
  matmulBf16PairedFused: MatmulExport;
}

/**
 * The kernel's export that multiplies panels of `format`, interleaved in pairs or not (the
 * kernel source's section 9): over f32 and bf16 panels the one with fused multiply-adds
 * (section 2), in inference and training alike; q8 sums integers and has one arithmetic.
 */
export function matmulExportName(format: PanelFormat, paired: boolean): 'matmulF32Fused' | 'matmulBf16Fused' | 'matmulF32PairedFused' | 'matmulBf16PairedFused' | 'matmulQ8' {
  if (format === 'q8') return 'matmulQ8';
  if (paired) return format === 'bf16' ? 'matmulBf16PairedFused' : 'matmulF32PairedFused';
  return format === 'bf16' ? 'matmulBf16Fused' : 'matmulF32Fused';
}

/**
 * Whether the tiles read x's rows from the scratch xt rather than from x: quantized for q8
 * panels, one row included (the kernel source's section 8), or interleaved for two rows and
 * more of unpaired panels (section 7; panels in pairs read x in place, section 9).
 */
export function readsRowScratch(format: PanelFormat, paired: boolean, M: number): boolean {
  return format === 'q8' || (M >= 2 && !paired);
}

/** x's rows into the scratch xt as the tiles read them, where they do (readsRowScratch): on tfjs's heap and on the threads' memory alike. */
export function prepareRows(kernels: MatmulKernels, format: PanelFormat, paired: boolean, x: number, xt: number, M: number, K: number): void {
  if (format === 'q8') kernels.quantizeRows(x, xt, M, K);
  else if (readsRowScratch(format, paired, M)) kernels.interleaveRows(x, xt, M, K);
}

/** The transposed kernel's exports (libs/engine/assembly/matmul-transposed.ts), in both its builds. */
export interface TransposedKernels {
  transposeRows(dy: number, dyT: number, M: number, N: number): void;
  matmulTransposedF32(packed: number, dx: number, M: number, K: number, N: number, dyT: number, acc: number, kFrom: number, kTo: number): void;
}

/** The LoRA kernel's exports for the threads (libs/engine/assembly/lora.ts, its table of parts at the end). */
interface LoraKernels {
  loraForwardRows(x: number, K: number, M: number, table: number, parts: number, y: number, yWidth: number, from: number, to: number, thread: number): void;
  adaptedBackwardFirst(packed: number, dx: number, M: number, K: number, N: number, dyT: number, acc: number, x: number, dy: number, table: number, parts: number, dxLora: number, from: number, to: number, thread: number): void;
  adaptedBackwardSecond(x: number, K: number, M: number, dy: number, N: number, table: number, parts: number, dxLora: number, dx: number, from: number, to: number, thread: number): void;
  loraSumUnits(K: number, table: number, parts: number): number;
  transposeFactor(aT: number, a: number, K: number, r: number): void;
}

/** Floats of the blocks the LoRA kernel's table of `parts` needs over x [M, K]: the table, then each part's aT, a, bT, h, dh, daT and dbT. */
function loraSizes(parts: ThreadedLoraPart[], M: number, K: number): number[] {
  if (parts.length === 0) return [];
  return [parts.length * LORA_PART_SLOTS, ...parts.flatMap(({ r, width }) => [K * r, r * K, r * width, M * r, M * r, K * r, r * width])];
}

const PAGE = 64 << 10;
/** 4 GB: all that a 32-bit WebAssembly memory addresses. */
const MAX_PAGES = 65536;
/** Blocks start on cache lines: panels stream from a line's start. */
const ALIGN = 64;

/** A shared WebAssembly memory of one page that can grow to `maxPages`. */
export function sharedMemory(maxPages = MAX_PAGES): SharedMemory {
  return new WebAssembly.Memory({ initial: 1, maximum: maxPages, shared: true });
}

/**
 * First-fit allocation of a shared memory's bytes, growing it when nothing free is large
 * enough. Offset 0 is never given out: the kernel reads a bias at 0 as none.
 */
export class Arena {
  /** Free blocks, by offset, none adjacent to another. */
  private readonly free: { offset: number; bytes: number }[] = [];
  private end = ALIGN;

  constructor(private readonly memory: SharedMemory) {}

  allocate(size: number): number {
    const bytes = Math.ceil(size / ALIGN) * ALIGN;
    const i = this.free.findIndex((block) => block.bytes >= bytes);
    if (i >= 0) {
      const block = this.free[i];
      const offset = block.offset;
      if (block.bytes === bytes) this.free.splice(i, 1);
      else Object.assign(block, { offset: offset + bytes, bytes: block.bytes - bytes });
      return offset;
    }
    const offset = this.end;
    const needed = Math.ceil((offset + bytes) / PAGE) - this.memory.buffer.byteLength / PAGE;
    if (offset + bytes > MAX_PAGES * PAGE) throw new RangeError(`matmul threads: ${bytes} more bytes of weights do not fit in a 4 GB memory`);
    if (needed > 0) this.memory.grow(needed);
    this.end = offset + bytes;
    return offset;
  }

  release(offset: number, size: number): void {
    const bytes = Math.ceil(size / ALIGN) * ALIGN;
    let i = this.free.findIndex((block) => block.offset > offset);
    if (i < 0) i = this.free.length;
    this.free.splice(i, 0, { offset, bytes });
    // Merge with the next block, then with the previous one, then give the tail back to `end`.
    const merge = (j: number) => {
      const [a, b] = [this.free[j], this.free[j + 1]];
      if (a && b && a.offset + a.bytes === b.offset) {
        a.bytes += b.bytes;
        this.free.splice(j + 1, 1);
      }
    };
    merge(i);
    if (i > 0) merge(i - 1);
    const last = this.free[this.free.length - 1];
    if (last && last.offset + last.bytes === this.end) {
      this.end = last.offset;
      this.free.pop();
    }
  }

  /** Bytes given out and not released. */
  get used(): number {
    return this.end - ALIGN - this.free.reduce((sum, block) => sum + block.bytes, 0);
  }
}

/** One product's operands, as offsets into the threads' memory except where they are tfjs-heap views. */
export interface ThreadedProduct {
  /** x [M, K], in tfjs's heap. */
  x: Float32Array;
  /** The packed weights, in the threads' memory (MatMulThreads.store). */
  packed: number;
  /** bias [N] in tfjs's heap, or null. */
  bias: Float32Array | null;
  /** out [M, N], in tfjs's heap: written. */
  out: Float32Array;
  M: number;
  K: number;
  N: number;
  format: PanelFormat;
  /** Whether the panels are interleaved in pairs (the kernel source's section 9). */
  paired: boolean;
  readAhead: boolean;
  oneRowWide: boolean;
  /** Adapters whose deltas are added to out, on the threads too (f32 parts, K and each r and width multiples of 4). */
  lora?: ThreadedLoraPart[];
}

/**
 * A LoRA adapter on columns [col, col + width) of a threaded product's output
 * (libs/engine/assembly/lora.ts): delta = scale (x aT) bT. The factors are views of tfjs's heap.
 */
export interface ThreadedLoraPart {
  /** [K, r] */
  aT: Float32Array;
  /** [r, width] */
  bT: Float32Array;
  scale: number;
  col: number;
  r: number;
  width: number;
}

/** Where a part's gradients go, views of tfjs's heap, written: daT [K, r] and dbT [r, width]. */
export interface ThreadedLoraGradient {
  daT: Float32Array;
  dbT: Float32Array;
}

/** A part's row in the LoRA kernel's table: its blocks' offsets, scale and shape (lora.ts, PART_SLOTS). */
const LORA_SLOTS = { aT: 0, a: 1, bT: 2, scale: 3, col: 4, r: 5, width: 6, h: 7, dh: 8, daT: 9, dbT: 10 } as const;
const LORA_PART_SLOTS = 11;
/** Rows of x per unit of the LoRA kernel's row-wise exports: whole 4-row tiles (lora.ts). */
const LORA_ROWS = 4;

/** One input gradient's operands (dx = dy W^T, W packed as f32 panels). */
export interface TransposedProduct {
  /** dy [M, N], in tfjs's heap. */
  dy: Float32Array;
  /** The packed weights (f32 panels), in the threads' memory (MatMulThreads.store). */
  packed: number;
  /** dx [M, K], in tfjs's heap: written. */
  dx: Float32Array;
  M: number;
  K: number;
  N: number;
}

/**
 * An adapted projection's backward pass: the frozen input gradient with the adapters' share
 * added, dx = dy W^T + sum dh aT^T, and each adapter's gradients (runLoraInputGradient).
 */
export interface LoraInputGradient extends TransposedProduct {
  /** The projection's input x [M, K], in tfjs's heap. */
  x: Float32Array;
  lora: ThreadedLoraPart[];
  /** One per part, in order. */
  grads: ThreadedLoraGradient[];
}

/**
 * A prompt's attention (libs/engine/assembly/attention.ts, promptAttention): q and out [B T,
 * KV G D] token-major, k and v [B, KV, stride, D] of which the first S columns count, mask
 * [maskRows, T, S]; all views of tfjs's heap, out written.
 */
export interface ThreadedAttention {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  mask: Float32Array;
  out: Float32Array;
  B: number;
  KV: number;
  G: number;
  T: number;
  S: number;
  D: number;
  maskRows: number;
  stride: number;
}

/**
 * A prompt's attention's gradient (libs/engine/assembly/attention.ts, attentionBackward): q, dO
 * and dq [B T, KV G D] token-major, k, v, dk and dv [B, KV, S, D], mask [maskRows, T, S]; all
 * views of tfjs's heap, dq, dk and dv written.
 */
export interface ThreadedAttentionBackward extends Omit<ThreadedAttention, 'out' | 'stride'> {
  dO: Float32Array;
  dq: Float32Array;
  dk: Float32Array;
  dv: Float32Array;
}

/** A product set to work on (publish): `divisor` 0 when the caller computes it alone. */
interface Published {
  units: number;
  unit: number;
  divisor: number;
}

/** A helper that has not finished its share by then is taken for dead (its thread cannot report it while this one waits). */
const HELPER_TIMEOUT_MS = 60_000;

/** The calling thread's own work should be worth waking the helpers: below this many multiply-adds a product runs on one thread. */
const MIN_SPLIT_MACS = 1 << 16;

/** The calling thread plus helper threads running the matmul kernel over weights stored once, in a shared memory. */
export class MatMulThreads {
  private readonly memory = sharedMemory();
  private readonly arena = new Arena(this.memory);
  private readonly kernels: MatmulKernels;
  private readonly transposed: TransposedKernels;
  private readonly attention: AttentionKernels;
  private readonly lora: LoraKernels;
  private readonly control = new Int32Array(new SharedArrayBuffer(4 * (SLOT.Finished + 1)));
  private readonly helpers: Worker[] = [];
  /** The current product's operands and scratch (x, xt, bias and out; dy, dyT, acc and dx; or an attention's): one block, reallocated larger when a product needs it. */
  private scratch = { offset: 0, bytes: 0 };
  private generation = 0;
  /** An input gradient begun and not yet finished (beginTransposed). */
  private pending: { published: Published; own: (from: number, to: number) => void; dx: number; size: number } | null = null;
  /** 'failed' once a helper failed: products can no longer be trusted, and run() throws. */
  private state: 'running' | 'failed' | 'stopped' = 'running';

  /** `threads` in all (the caller's and threads - 1 helpers), at least 2. */
  constructor(readonly threads: number) {
    if (!Number.isInteger(threads) || threads < 2 || threads > 64) throw new RangeError(`matmul threads: ${threads} is not a whole number from 2 to 64`);
    const modules = [MATMUL_SHARED_WASM, MATMUL_TRANSPOSED_SHARED_WASM, ATTENTION_SHARED_WASM, LORA_SHARED_WASM].map((bytes) => new WebAssembly.Module(bytes));
    const [kernels, transposed, attention, lora] = modules.map((module) => new WebAssembly.Instance(module, { env: { memory: this.memory } }).exports);
    this.kernels = kernels as unknown as MatmulKernels;
    this.transposed = transposed as unknown as TransposedKernels;
    this.attention = attention as unknown as AttentionKernels;
    this.lora = lora as unknown as LoraKernels;
    const script = helperScript();
    for (let index = 0; index < threads - 1; index++) {
      const workerData: HelperData = { memory: this.memory, modules, productTable: PRODUCTS, control: this.control.buffer, spinMs: SPIN_MS, slots: SLOT, thread: index + 1 };
      const helper = new Worker(script, { workerData });
      // Helpers never keep the process alive, and a process exiting stops them.
      helper.unref();
      this.helpers.push(helper);
    }
  }

  /** Copies packed weights (bytes of tfjs's heap) into the shared memory once; returns their offset there. */
  store(panels: Uint8Array): number {
    const offset = this.arena.allocate(panels.byteLength);
    new Uint8Array(this.memory.buffer, offset, panels.byteLength).set(panels);
    return offset;
  }

  /** Frees weights that store() placed at `offset`. */
  release(offset: number, bytes: number): void {
    this.arena.release(offset, bytes);
  }

  /** Re-lays the f32 or bf16 panels at `offset` in place, into pairs or back (the kernel's relayPairs), on this thread. */
  relayPairs(offset: number, K: number, N: number, bf16: boolean, toPairs: boolean): void {
    this.assertReady();
    const [scratch] = this.blocks([2 * K * (bf16 ? 4 : 8)]);
    this.kernels.relayPairs(offset, scratch, K, N, bf16 ? 1 : 0, toPairs ? 1 : 0);
  }

  /** out = x packed + bias, divided by panels between the threads (see the file's comment). */
  run(p: ThreadedProduct): void {
    this.assertReady();
    const { M, K, N } = p;
    const lora = p.lora ?? [];
    const [x, xt, bias, out, ...loraBlocks] = this.blocks([M * K, M * K, N, M * N, ...loraSizes(lora, M, K)]);
    const heap = this.memory.buffer;
    new Float32Array(heap, x, M * K).set(p.x);
    if (p.bias) new Float32Array(heap, bias, N).set(p.bias);
    prepareRows(this.kernels, p.format, p.paired, x, xt, M, K);
    const args = [x, p.packed, p.bias ? bias : 0, out, M, K, N, p.readAhead ? 1 : 0, p.oneRowWide ? 1 : 0, xt] as const;
    const name = matmulExportName(p.format, p.paired);
    const matmul = this.kernels[name];
    // Ranges of whole panels, in fours where they allow (the one-row wide tile's step), else
    // in pairs where they are paired (the paired one-row tile's).
    const panels = N / 8;
    const unit = panels % 4 === 0 ? 4 : p.paired ? 2 : 1;
    this.divide(productIndex(name), args, panels / unit, unit, M * K * N, (from, to) => matmul(...args, from, to));
    if (lora.length > 0) {
      // The adapters' deltas added to out, divided by rows of x (lora.ts, loraForwardRows).
      const table = this.placeLora(lora, loraBlocks, K, false);
      const loraArgs = [x, K, M, table, lora.length, out, N] as const;
      const macs = M * lora.reduce((sum, part) => sum + part.r * (K + part.width), 0);
      this.divide(productIndex('loraForwardRows'), loraArgs, Math.ceil(M / LORA_ROWS), LORA_ROWS, macs, (from, to) => this.lora.loraForwardRows(...loraArgs, from, to, 0));
    }
    p.out.set(new Float32Array(heap, out, M * N));
  }

  /**
   * An adapted projection's backward pass on the threads (lora.ts, adaptedBackwardFirst and
   * adaptedBackwardSecond), in two pools of units: the adapters' h, dh and share of dx by rows
   * with the frozen input gradient by ranges of k (as runTransposed), which the rows' work
   * does not need; then dx + that share by rows with daT by its rows and dbT by its columns. dx and the
   * gradients are the same bits as the frozen kernel's dx plus the LoRA kernel's share on one
   * thread.
   */
  runLoraInputGradient(p: LoraInputGradient): void {
    this.assertReady();
    const { M, K, N, lora } = p;
    const { args, dy, dx, more } = this.stageTransposed(p, [M * K, M * K, ...loraSizes(lora, M, K)]);
    const [x, dxLora, ...loraBlocks] = more;
    const heap = this.memory.buffer;
    new Float32Array(heap, x, M * K).set(p.x);
    const table = this.placeLora(lora, loraBlocks, K, true);
    const rowUnits = Math.ceil(M / LORA_ROWS);
    const loraMacs = M * lora.reduce((sum, part) => sum + part.r * (2 * K + part.width), 0);
    const first = [...args, x, dy, table, lora.length, dxLora] as const;
    this.divide(productIndex('adaptedBackwardFirst'), first, rowUnits + K / 4, 1, M * K * N + loraMacs, (from, to) => this.lora.adaptedBackwardFirst(...first, from, to, 0));
    const second = [x, K, M, dy, N, table, lora.length, dxLora, dx] as const;
    const units = rowUnits + this.lora.loraSumUnits(K, table, lora.length);
    this.divide(productIndex('adaptedBackwardSecond'), second, units, 1, loraMacs, (from, to) => this.lora.adaptedBackwardSecond(...second, from, to, 0));
    p.dx.set(new Float32Array(heap, dx, M * K));
    p.grads.forEach((grad, i) => {
      const slots = new Int32Array(heap, table + 4 * i * LORA_PART_SLOTS, LORA_PART_SLOTS);
      grad.daT.set(new Float32Array(heap, slots[LORA_SLOTS.daT], grad.daT.length));
      grad.dbT.set(new Float32Array(heap, slots[LORA_SLOTS.dbT], grad.dbT.length));
    });
  }

  /**
   * Writes the LoRA kernel's table of `parts` into the first of `blocks` (loraSizes' blocks,
   * in its order) and copies each part's factors in (and aT transposed, for the backward
   * pass's dx); returns the table's offset.
   */
  private placeLora(parts: ThreadedLoraPart[], blocks: number[], K: number, backward: boolean): number {
    const heap = this.memory.buffer;
    const [table, ...own] = blocks;
    const slots = new Int32Array(heap, table, parts.length * LORA_PART_SLOTS);
    const scales = new Float32Array(slots.buffer, table, slots.length);
    const floats = new Float32Array(heap);
    parts.forEach((part, i) => {
      const [aT, a, bT, h, dh, daT, dbT] = own.slice(7 * i, 7 * i + 7);
      const row = i * LORA_PART_SLOTS;
      slots[row + LORA_SLOTS.aT] = aT;
      slots[row + LORA_SLOTS.a] = a;
      slots[row + LORA_SLOTS.bT] = bT;
      slots[row + LORA_SLOTS.col] = part.col;
      slots[row + LORA_SLOTS.r] = part.r;
      slots[row + LORA_SLOTS.width] = part.width;
      slots[row + LORA_SLOTS.h] = h;
      slots[row + LORA_SLOTS.dh] = dh;
      slots[row + LORA_SLOTS.daT] = daT;
      slots[row + LORA_SLOTS.dbT] = dbT;
      scales[row + LORA_SLOTS.scale] = part.scale;
      floats.set(part.aT, aT / 4);
      floats.set(part.bT, bT / 4);
      if (backward) this.lora.transposeFactor(aT, a, K, part.r);
    });
    return table;
  }

  /**
   * A prompt's attention, divided by tiles of 4 query rows of one KV head between the threads
   * (see the file's comment): q, the first S columns of k and v, and the mask copied in, the
   * keys transposed once here for every thread, out copied back.
   */
  runPromptAttention(p: ThreadedAttention): void {
    this.assertReady();
    const { B, KV, G, T, S, D, maskRows, stride } = p;
    const heads = B * KV;
    const S8 = Math.ceil(S / 8) * 8;
    const [qFloats, kvFloats, maskFloats] = [B * T * KV * G * D, heads * S * D, maskRows * T * S];
    // kT [heads, D, S8], then each thread's scratch: a tile's 4 rows of scores.
    const [q, k, kT, v, mask, scratch, out] = this.blocks([qFloats, kvFloats, heads * D * S8, kvFloats, maskFloats, 4 * S8 * this.threads, qFloats]);
    const heap = this.memory.buffer;
    new Float32Array(heap, q, qFloats).set(p.q.subarray(0, qFloats));
    // Only the S columns that count, each head's S rows of D after the previous head's.
    const [kIn, vIn] = [new Float32Array(heap, k, kvFloats), new Float32Array(heap, v, kvFloats)];
    for (let g = 0; g < heads; g++) {
      kIn.set(p.k.subarray(g * stride * D, (g * stride + S) * D), g * S * D);
      vIn.set(p.v.subarray(g * stride * D, (g * stride + S) * D), g * S * D);
    }
    new Float32Array(heap, mask, maskFloats).set(p.mask.subarray(0, maskFloats));
    this.attention.transposeKeys(k, kT, heads, S, S, D);
    const args = [q, kT, v, mask, scratch, out, B, KV, G, T, S, D, maskRows, S] as const;
    const tiles = this.attention.promptAttentionTiles(B, KV, G, T);
    // Multiply-adds: every query row against the keys up to its own (about half of S), twice (scores, then values).
    const macs = B * KV * G * T * S * D;
    this.divide(productIndex('promptAttention'), args, tiles, 1, macs, (from, to) => this.attention.promptAttention(...args, from, to, 0));
    p.out.set(new Float32Array(heap, out, qFloats));
  }

  /** A prompt's attention's gradient, divided by KV heads between the threads: the operands copied in, the gradients back. */
  runAttentionBackward(p: ThreadedAttentionBackward): void {
    this.assertReady();
    const { B, KV, G, T, S, D, maskRows } = p;
    const heads = B * KV;
    const [qFloats, kvFloats, maskFloats] = [B * T * KV * G * D, heads * S * D, maskRows * T * S];
    // q, k, v, mask, dO in; dq, dk, dv out; then each thread's scratch.
    const sizes = [qFloats, kvFloats, kvFloats, maskFloats, qFloats, qFloats, kvFloats, kvFloats, this.attention.attentionBackwardScratch(S, D) * this.threads];
    const at = this.blocks(sizes);
    const heap = this.memory.buffer;
    [p.q, p.k, p.v, p.mask, p.dO].forEach((input, i) => new Float32Array(heap, at[i], sizes[i]).set(input.subarray(0, sizes[i])));
    const [q, k, v, mask, dO, dq, dk, dv, scratch] = at;
    const args = [q, k, v, mask, dO, dq, dk, dv, scratch, B, KV, G, T, S, D, maskRows] as const;
    // Each head's tokens against the keys up to their own: five products of D (scores, dP, dq, dk, dv) over the causal half of the pairs, about 3 B KV G T S D.
    const macs = 3 * B * KV * G * T * S * D;
    this.divide(productIndex('attentionBackward'), args, heads, 1, macs, (from, to) => this.attention.attentionBackward(...args, from, to, 0));
    [p.dq, p.dk, p.dv].forEach((output, i) => output.set(new Float32Array(heap, at[5 + i], sizes[5 + i])));
  }

  /** dx = dy W^T from f32 panels, divided by ranges of k between the threads (see the file's comment). */
  runTransposed(p: TransposedProduct): void {
    this.beginTransposed(p);
    this.finishTransposed(p.dx);
  }

  /**
   * The first half of runTransposed: copies dy in and sets the helpers to work on dx = dy W^T,
   * so that the caller can do other work (on tfjs's heap, not on these threads) until
   * finishTransposed takes its share of the chunks left and hands dx over. No other product
   * runs in between.
   */
  beginTransposed(p: Omit<TransposedProduct, 'dx'>): void {
    this.assertReady();
    const { M, K, N } = p;
    const { args, dx } = this.stageTransposed(p, []);
    // Ranges of whole 4-row tiles of W.
    const published = this.publish(productIndex('matmulTransposedF32'), args, K / 4, 4, M * K * N);
    this.pending = { published, own: (from, to) => this.transposed.matmulTransposedF32(...args, from, to), dx, size: M * K };
  }

  /**
   * An input gradient's operands in this memory: dy copied in and transposed as the
   * transposed kernel reads it, with dx's block and `more` blocks after it. Returns
   * matmulTransposedF32's arguments before its range, and the blocks' offsets.
   */
  private stageTransposed(p: Omit<TransposedProduct, 'dx'>, more: number[]): { args: readonly [number, number, number, number, number, number, number]; dy: number; dx: number; more: number[] } {
    const { M, K, N } = p;
    // dy's rows padded to whole 8-row tiles in dyT and acc (matmul-transposed.ts, section 1).
    const Mp = (M + 7) & ~7;
    const [dy, dyT, acc, dx, ...rest] = this.blocks([M * N, N * Mp, K * Mp, M * K, ...more]);
    new Float32Array(this.memory.buffer, dy, M * N).set(p.dy);
    this.transposed.transposeRows(dy, dyT, M, N);
    return { args: [p.packed, dx, M, K, N, dyT, acc], dy, dx, more: rest };
  }

  /** The second half of runTransposed: the caller's share of the chunks left, then dx [M, K] written (a view of tfjs's heap taken now). */
  finishTransposed(dx: Float32Array): void {
    const pending = this.pending;
    if (!pending) throw new Error('matmul threads: no input gradient was begun');
    this.pending = null;
    this.join(pending.published, pending.own);
    dx.set(new Float32Array(this.memory.buffer, pending.dx, pending.size));
  }

  /** Stops the helper threads. The weights stored here are gone with this object. */
  async close(): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    Atomics.store(this.control, SLOT.Stop, 1);
    this.generation += 2;
    Atomics.store(this.control, SLOT.Generation, this.generation);
    Atomics.notify(this.control, SLOT.Generation);
    // Referenced again until they exit: an unreferenced helper's exit would not keep a
    // process whose only work left is this wait alive, and it would end with the wait pending.
    for (const helper of this.helpers) helper.ref();
    await Promise.all(this.helpers.map((helper) => new Promise((resolve) => helper.once('exit', resolve))));
  }

  /**
   * Runs one product over [0, units * unit) in chunks of whole units, which the threads take
   * from a shared counter (CHUNK_DIVISOR): `own` computes a chunk on this thread, a helper runs
   * export `product` with `args` on one.
   */
  private divide(product: number, args: readonly number[], units: number, unit: number, macs: number, own: (from: number, to: number) => void): void {
    this.join(this.publish(product, args, units, unit, macs), own);
  }

  /**
   * Sets the helpers to work on a product (divide's first half), unless it is too small to be
   * worth waking them (`macs`): then the caller computes it all when it joins.
   */
  private publish(product: number, args: readonly number[], units: number, unit: number, macs: number): Published {
    if (macs < MIN_SPLIT_MACS * this.threads || units < 2) return { units, unit, divisor: 0 };
    const ctl = this.control;
    // The previous product's arguments are rewritten only once no helper is still reading them.
    Atomics.store(ctl, SLOT.Generation, ++this.generation);
    this.waitFor(() => Atomics.load(ctl, SLOT.Active) === 0, 'leave the previous product');
    const divisor = CHUNK_DIVISOR * this.threads;
    ctl.set(args, SLOT.Args);
    ctl[SLOT.Product] = product;
    ctl[SLOT.Units] = units;
    ctl[SLOT.Unit] = unit;
    ctl[SLOT.Divisor] = divisor;
    Atomics.store(ctl, SLOT.Next, 0);
    Atomics.store(ctl, SLOT.Finished, 0);
    Atomics.store(ctl, SLOT.Generation, ++this.generation);
    Atomics.notify(ctl, SLOT.Generation);
    return { units, unit, divisor };
  }

  /** The caller's part of a published product (divide's second half): chunks until none is left, then the wait for those in progress. */
  private join({ units, unit, divisor }: Published, own: (from: number, to: number) => void): void {
    if (divisor === 0) {
      own(0, units * unit);
      return;
    }
    const ctl = this.control;
    for (;;) {
      const from = Atomics.load(ctl, SLOT.Next);
      if (from >= units) break;
      const to = Math.min(units, from + Math.ceil((units - from) / divisor));
      if (Atomics.compareExchange(ctl, SLOT.Next, from, to) !== from) continue;
      own(unit * from, unit * to);
      Atomics.add(ctl, SLOT.Finished, to - from);
    }
    this.waitFor(() => Atomics.load(ctl, SLOT.Finished) === units, 'finish its chunk', SLOT.Finished);
    if (Atomics.load(ctl, SLOT.Failed) === 1) throw this.failed('matmul threads: a helper thread failed; the product is lost');
  }

  /** Throws unless a new product can start: the threads running, and no input gradient begun and not finished. */
  private assertReady(): void {
    if (this.state !== 'running') throw new Error(`matmul threads: ${this.state === 'stopped' ? 'stopped' : 'a helper thread failed before'}`);
    if (this.pending) throw new Error('matmul threads: an input gradient was begun and not finished');
  }

  /**
   * Spins until `done` holds; past a millisecond, sleeps between looks (woken early by a
   * notify on `slot`, when given). A helper that keeps it from holding for HELPER_TIMEOUT_MS
   * is taken for dead.
   */
  private waitFor(done: () => boolean, what: string, slot?: number): void {
    const since = performance.now();
    while (!done()) {
      const waited = performance.now() - since;
      if (waited > HELPER_TIMEOUT_MS) throw this.failed(`matmul threads: a helper thread did not ${what} in ${HELPER_TIMEOUT_MS / 1000} s`);
      if (waited > 1 && slot !== undefined) Atomics.wait(this.control, slot, Atomics.load(this.control, slot), 1);
    }
  }

  /** After a helper failed, no product can be trusted: every later run() throws. */
  private failed(message: string): Error {
    this.state = 'failed';
    return new Error(message);
  }

  /** Offsets of consecutive blocks of `floats[i]` floats each, in the scratch block (scratchFor). */
  private blocks(floats: number[]): number[] {
    const offsets: number[] = [];
    let offset = this.scratchFor(4 * floats.reduce((sum, n) => sum + n, 0));
    for (const n of floats) {
      offsets.push(offset);
      offset += 4 * n;
    }
    return offsets;
  }

  private scratchFor(bytes: number): number {
    if (this.scratch.bytes < bytes) {
      if (this.scratch.bytes > 0) this.arena.release(this.scratch.offset, this.scratch.bytes);
      this.scratch = { offset: this.arena.allocate(bytes), bytes };
    }
    return this.scratch.offset;
  }
}
