import * as tf from '@tensorflow/tfjs-core';
import { attentionKernelFor } from './decode-attention';
import { addLoraDeltasInPlace, type LoraPart } from './lora';
import { matMulKernelAvailable, packedMatMulInto, type MatMulPlan, type PackedWeights } from './matmul';
import { rmsNormKernelFor } from './rms-norm';
import { ropeKernelFor } from './rope';
import { swigluKernelFor } from './swiglu';
import { heapOffset, heapView, WasmBackendInternals } from './wasm-heap';

/**
 * One decoder block of a decoding step (one new token per row) on tfjs-wasm as one call
 * (ops/decoder-block.ts chooses it): the steps of model/llama.ts's Block.forward, each by the
 * WebAssembly kernel that the tfjs path dispatches for it, called directly on tfjs-wasm's heap,
 * with the step's keys and values rotated and written straight into the KV cache's spare column. A one-sequence step of
 * SmolLM2-135M otherwise makes about 23 tfjs dispatches per block (splits, reshapes, residual
 * adds, the kernels), each with tfjs's bookkeeping, which a token pays 30 times over.
 *
 * Low-rank adapters (a served LoRA checkpoint, or several routed row by row by LoraRouter)
 * are added after each product by the LoRA kernel, as ops/linear.ts adds them at inference on
 * wasm.
 *
 * The kernels and their order are the tfjs path's, and the residual adds are float32 adds
 * either way, so the block gives the same bits: a sequence decodes the same tokens and
 * logprobs by either path, alone or in a batch.
 *
 * It computes the Llama/Qwen2 block only: ops/decoder-block.ts keeps any other (Qwen3's
 * q_norm and k_norm, Gemma 3's norms and GeGLU: Block.isLlamaBlock) on the tfjs path.
 */

/** A block's weights in the kernels' layouts (ops/decoder-block.ts gathers them). */
export interface DecodeBlockWeights {
  inputNorm: tf.Tensor1D;
  postAttentionNorm: tf.Tensor1D;
  /** The RMSNorms' epsilon. */
  eps: number;
  /** q | k | v, o, gate | up and down, packed for the matmul kernel, with their biases (Qwen2's q, k, v) and adapters. */
  qkv: PackedProjection;
  o: PackedProjection;
  gateUp: PackedProjection;
  down: PackedProjection;
  plan: Readonly<MatMulPlan>;
}

export interface PackedProjection {
  packed: PackedWeights;
  bias: tf.Tensor1D | null;
  /** Low-rank adapters added to the product (kernels/lora.ts), each to all rows or to its own; none for the base model. */
  lora: LoraPart[];
}

/** What the step shares between blocks, as model/llama.ts's StepContext holds it. */
export interface DecodeBlockStep {
  heads: number;
  kvHeads: number;
  headDim: number;
  /** RoPE tables [rows, heads + kvHeads, headDim] (q heads scaled by 1/sqrt(headDim)). */
  cos: tf.Tensor3D;
  sin: tf.Tensor3D;
  /** The additive mask [rows, 1, 1, S]: S - 1 cached columns and the new one. */
  mask: tf.Tensor4D;
  /** This layer's KV cache [rows, kvHeads, capacity, headDim], written at `column` (< capacity). */
  keys: tf.Tensor4D;
  values: tf.Tensor4D;
  column: number;
}

/** The kernels a block calls, instantiated on this backend's heap, or null where one is missing. */
function kernelsOn(backend: object) {
  const norm = rmsNormKernelFor(backend);
  const rope = ropeKernelFor(backend);
  const attention = attentionKernelFor(backend)?.attention;
  const swiglu = swigluKernelFor(backend);
  return norm && rope && attention && swiglu ? { norm, rope, attention, swiglu } : null;
}

/** Whether decoding may run blocks in one call (setDecodeBlock). */
let enabled = true;

/** Turns decodeBlock on (the default) or off: off, every block runs its tfjs ops (for benchmarks that compare the two). */
export function setDecodeBlock(on: boolean): void {
  enabled = on;
}

/** Whether decodeBlock runs here: on, the wasm backend with every kernel it calls, and no gradient being recorded. */
export function decodeBlockAvailable(): boolean {
  return enabled && matMulKernelAvailable() && !tf.engine().isTapeOn() && kernelsOn(tf.backend()) !== null;
}

/** Whether decodeBlock takes these sizes: the kernels' SIMD steps (4 floats, RoPE's half head in them). */
export function decodeBlockFits(hidden: number, intermediate: number, headDim: number): boolean {
  return hidden % 4 === 0 && intermediate % 4 === 0 && headDim % 8 === 0;
}

/**
 * x [rows, hidden] through one block for a decoding step: returns the block's output and
 * writes the step's rotated keys and values into column `step.column` of the cache. The
 * caller checks decodeBlockAvailable and decodeBlockFits first.
 */
export function decodeBlock(x: tf.Tensor2D, w: DecodeBlockWeights, step: DecodeBlockStep): tf.Tensor2D {
  const wasm = tf.backend() as unknown as WasmBackendInternals;
  const [B, C] = x.shape;
  const { heads: H, kvHeads: KV, headDim: D, keys, values, column } = step;
  const G = H / KV;
  const capacity = keys.shape[2];
  const S = step.mask.shape[3];
  const F = w.down.packed.inFeatures;
  const qkvWidth = (H + 2 * KV) * D;
  if (step.mask.shape[0] !== B || keys.shape[0] !== B || column !== S - 1 || column >= capacity) {
    throw new Error(`decodeBlock: ${B} rows, mask [${step.mask.shape}], cache [${keys.shape}] and column ${column} do not fit together`);
  }

  const scratch: tf.TensorInfo[] = [];
  const buffer = (shape: number[]) => {
    const info = wasm.makeOutput(shape, 'float32');
    scratch.push(info);
    return info;
  };
  const at = (t: tf.TensorInfo) => heapOffset(wasm, t);
  const out = wasm.makeOutput([B, C], 'float32');
  try {
    const normed = buffer([B, C]);
    const qkv = buffer([B, qkvWidth]);
    const q = buffer([B, H * D]);
    const attended = buffer([B, H * D]);
    const projected = buffer([B, C]);
    const h = buffer([B, C]);
    const gateUp = buffer([B, 2 * F]);
    const gated = buffer([B, F]);
    const scores = buffer([G, S]);
    const { norm, rope, attention, swiglu } = kernelsOn(wasm) as NonNullable<ReturnType<typeof kernelsOn>>;
    const multiply = (input: tf.TensorInfo, p: PackedProjection, output: tf.TensorInfo) => {
      packedMatMulInto(wasm, input, p.packed, p.bias, output, w.plan);
      addLoraDeltasInPlace(wasm, input, output, p.lora);
    };

    // Attention: norm, q|k|v, RoPE on q and k (k straight into the cache), v into the cache.
    norm(at(x), at(w.inputNorm), at(normed), B, C, w.eps);
    multiply(normed, w.qkv, qkv);
    const [cos, sin] = [at(step.cos), at(step.sin)];
    const [qkvFloats, valueFloats] = [heapView(wasm, qkv), heapView(wasm, values)];
    for (let b = 0; b < B; b++) {
      const row = at(qkv) + 4 * b * qkvWidth;
      const table = 4 * b * (H + KV) * D;
      rope(row, cos + table, sin + table, at(q) + 4 * b * H * D, H, D);
      for (let head = 0; head < KV; head++) {
        const cell = ((b * KV + head) * capacity + column) * D;
        const kHead = table + 4 * (H + head) * D;
        rope(row + 4 * (H + head) * D, cos + kHead, sin + kHead, at(keys) + 4 * cell, 1, D);
        const v = b * qkvWidth + (H + KV + head) * D;
        valueFloats.set(qkvFloats.subarray(v, v + D), cell);
      }
    }
    attention(at(q), at(keys), at(values), at(step.mask), at(scores), at(attended), B, KV, G, 1, S, D, B, capacity);
    multiply(attended, w.o, projected);
    addInto(wasm, x, projected, h);

    // MLP: norm, gate|up, SwiGLU, down, the residual into the output.
    norm(at(h), at(w.postAttentionNorm), at(normed), B, C, w.eps);
    multiply(normed, w.gateUp, gateUp);
    swiglu(at(gateUp), at(gated), B, F);
    multiply(gated, w.down, projected);
    addInto(wasm, h, projected, out);
  } catch (err) {
    wasm.disposeData(out.dataId);
    throw err;
  } finally {
    for (const info of scratch) wasm.disposeData(info.dataId);
  }
  return tf.engine().makeTensorFromTensorInfo(out) as tf.Tensor2D;
}

/** out = a + b elementwise, as float32 (the residual sum, as tf.add gives it). */
function addInto(wasm: WasmBackendInternals, a: tf.TensorInfo, b: tf.TensorInfo, out: tf.TensorInfo): void {
  const [x, y, sum] = [a, b, out].map((t) => heapView(wasm, t));
  for (let e = 0; e < sum.length; e++) sum[e] = x[e] + y[e];
}
