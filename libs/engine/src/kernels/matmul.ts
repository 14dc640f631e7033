import * as tf from '@tensorflow/tfjs-core';
import { MATMUL_WASM } from './matmul.wasm';
import { heapOffset, instantiateOnHeap, WasmBackendInternals } from './wasm-heap';

/**
 * The model's projections, x [M, K] W [K, N] (+ bias), as one WebAssembly SIMD kernel on
 * tfjs-wasm (source, with the why of its layout: libs/engine/kernels/matmul.ts). Against
 * XNNPACK's matMul on a whole SmolLM2-135M set of weights (bench/matmul.bench.ts, a busy
 * 2-core machine): 1.3-1.6x faster for 2 rows, even to 1.1x for 1, 4 and 8 (1 row is bound
 * by memory bandwidth either way), 1.15x for 16 and 1.3-1.4x for 64 and 256 rows (prefill).
 * There is no crossover, so inference uses it for every row count; an inference process
 * then never has XNNPACK pack the weights a second time (see FrozenLinear).
 *
 * W is first rearranged into panels of 8 columns (packWeights), once, into a tensor in
 * tfjs-wasm's heap: as large as W, or half as large when every weight of W is exactly a
 * bfloat16 (a checkpoint stored in bf16), which the kernel then reads as such, with the same
 * result to the bit and about two thirds of the time for one row (see the source's section
 * 1). Like the decode-attention kernel, both steps are tfjs kernels for the wasm backend
 * that run on tfjs's own memory (the module imports the backend's WebAssembly.Memory and
 * is given the heap offsets of the tensors: wasm-heap.ts); where tfjs-wasm does not expose
 * them every function here returns null so the caller uses tfjs ops.
 */
const MATMUL_KERNEL = 'TrainyardPackedMatMul';
const PACK_KERNEL = 'TrainyardPackPanels';

/** Columns per panel of the packed layout. */
const PANEL = 8;

interface Kernels {
  isBf16(w: number, count: number): number;
  pack(w: number, packed: number, K: number, N: number, bf16: number): void;
  matmul(x: number, packed: number, bias: number, out: number, M: number, K: number, N: number, bf16: number): void;
}

/** The kernels' attribute: whether the panels hold bf16 weights (two per float32 of the tensor). */
interface PanelFormat extends tf.NamedAttrMap {
  bf16: boolean;
}

/** The kernels instantiated on this backend's memory, or null when the backend does not expose it. */
function kernelsFor(backend: object): Kernels | null {
  return instantiateOnHeap(MATMUL_WASM, backend) as Kernels | null;
}

tf.registerKernel({
  kernelName: PACK_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { w } = inputs as Record<'w', tf.TensorInfo>;
    const { bf16 } = attrs as PanelFormat;
    const wasm = backend as unknown as WasmBackendInternals;
    const [K, N] = w.shape;
    const packed = wasm.makeOutput([N / PANEL, K, bf16 ? PANEL / 2 : PANEL], 'float32');
    (kernelsFor(backend) as Kernels).pack(heapOffset(wasm, w), heapOffset(wasm, packed), K, N, bf16 ? 1 : 0);
    return packed;
  },
});

tf.registerKernel({
  kernelName: MATMUL_KERNEL,
  backendName: 'wasm',
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { x, packed, bias } = inputs as Record<'x' | 'packed', tf.TensorInfo> & { bias?: tf.TensorInfo };
    const { bf16 } = attrs as PanelFormat;
    const wasm = backend as unknown as WasmBackendInternals;
    const [M, K] = x.shape;
    const N = packed.shape[0] * PANEL;
    const out = wasm.makeOutput([M, N], 'float32');
    const kernels = kernelsFor(backend) as Kernels;
    kernels.matmul(heapOffset(wasm, x), heapOffset(wasm, packed), bias ? heapOffset(wasm, bias) : 0, heapOffset(wasm, out), M, K, N, bf16 ? 1 : 0);
    return out;
  },
});

/** True when packWeights and packedMatMul run the kernels on the current backend. */
export function matMulKernelAvailable(): boolean {
  return tf.getBackend() === 'wasm' && kernelsFor(tf.backend()) !== null;
}

/**
 * A [K, N] weight rearranged for packedMatMul: panels [N/8, K, 8], panels[p][k][j] = W[k][8p + j],
 * as large as the weight itself; or, bf16, [N/8, K, 4] float32 holding the top halves of
 * the same weights, two per float (the kernel source's section 1). Dispose it with the weight.
 */
export class PackedWeights {
  constructor(readonly panels: tf.Tensor3D) {}

  /** Whether the panels hold the weights as bfloat16 (every weight was exactly one): 4 floats per step, not 8. */
  get bf16(): boolean {
    return this.panels.shape[2] === PANEL / 2;
  }

  get inFeatures(): number {
    return this.panels.shape[1];
  }

  get outFeatures(): number {
    return this.panels.shape[0] * PANEL;
  }

  dispose(): void {
    this.panels.dispose();
  }
}

/**
 * weightT [K, N] packed for packedMatMul, or null where the kernel does not apply (another
 * backend, not float32, N not a multiple of 8: such weights keep using tf.matMul). With
 * format 'auto', bf16 panels when every weight is exactly a bfloat16, f32 panels otherwise
 * ('f32': always): either way the products are those of weightT. The result is kept out of
 * any enclosing tf.tidy: it lives until disposed.
 */
export function packWeights(weightT: tf.Tensor2D, format: 'auto' | 'f32' = 'auto'): PackedWeights | null {
  if (!matMulKernelAvailable() || weightT.dtype !== 'float32' || weightT.shape[1] % PANEL !== 0) return null;
  const wasm = tf.backend() as unknown as WasmBackendInternals;
  const bf16 = format === 'auto' && (kernelsFor(wasm) as Kernels).isBf16(heapOffset(wasm, weightT), weightT.size) === 1;
  const attrs: PanelFormat = { bf16 };
  return new PackedWeights(tf.keep(tf.engine().runKernel(PACK_KERNEL, { w: weightT }, attrs) as tf.Tensor3D));
}

/**
 * x [M, K] W [K, N] (+ bias [N]) from W packed by packWeights, or null where tf.matMul should
 * run instead: another backend, not float32, or while a gradient is being recorded (the
 * kernel has none).
 */
export function packedMatMul(x: tf.Tensor2D, packed: PackedWeights, bias: tf.Tensor1D | null = null): tf.Tensor2D | null {
  const [M, K] = x.shape;
  if (M === 0 || !matMulKernelAvailable() || tf.engine().isTapeOn()) return null;
  if (x.dtype !== 'float32' || (bias && bias.dtype !== 'float32')) return null;
  if (K !== packed.inFeatures || (bias && bias.shape[0] !== packed.outFeatures)) {
    throw new Error(`packedMatMul: x [${x.shape}], weight [${packed.inFeatures}, ${packed.outFeatures}] and bias [${bias?.shape ?? ''}] do not fit together`);
  }
  const inputs: tf.NamedTensorMap = bias ? { x, packed: packed.panels, bias } : { x, packed: packed.panels };
  const attrs: PanelFormat = { bf16: packed.bf16 };
  return tf.engine().runKernel(MATMUL_KERNEL, inputs, attrs) as tf.Tensor2D;
}
