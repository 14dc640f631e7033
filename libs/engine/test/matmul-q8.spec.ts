import * as tf from '@tensorflow/tfjs-core';
import { PackedWeights, packWeights, packedMatMul, startMatMulThreads, stopMatMulThreads } from '../src/kernels/matmul';
import { LoadedModel, loadModel } from '../src/loader';
import { applyAdapter } from '../src/lora/lora-layer';
import { AdapterTensors, DEFAULT_LORA_SPEC, initLoraWeights } from '../src/lora/peft';
import { makeTiny, maxAbsDiff, useBackend } from './helpers';

/**
 * The q8 arithmetic of the kernel (libs/engine/assembly/matmul.ts, section 8) written out in
 * plain JS, in float32 step by step: what the kernel must give to the bit.
 */
const BLOCK = 32;
const f32 = Math.fround;

/** Round half to even, as WebAssembly's nearest does. */
function nearest(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** One block of 32 values as int8-range integers and their scale: d = max |v| / 127, q = nearest(v / d) through 1 / d. */
function quantize(values: number[]): { q: number[]; d: number } {
  const amax = values.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const d = f32(amax / 127);
  const id = d !== 0 ? f32(1 / d) : 0;
  return { q: values.map((v) => nearest(f32(v * id))), d };
}

/** out = x W (+ bias) with W and x quantized per block of 32 along k, summed as the kernel sums. */
function referenceQ8(x: Float32Array, w: Float32Array, bias: Float32Array | null, M: number, K: number, N: number): Float32Array {
  const blocks = Array.from({ length: K / BLOCK }, (_, b) => Array.from({ length: BLOCK }, (_, i) => b * BLOCK + i));
  const xq = Array.from({ length: M }, (_, m) => blocks.map((ks) => quantize(ks.map((k) => x[m * K + k]))));
  const wq = Array.from({ length: N }, (_, n) => blocks.map((ks) => quantize(ks.map((k) => w[k * N + n]))));
  const out = new Float32Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let acc = bias ? bias[n] : 0;
      blocks.forEach((_, b) => {
        const [xb, wb] = [xq[m][b], wq[n][b]];
        const sum = xb.q.reduce((s, q, i) => s + q * wb.q[i], 0);
        acc = f32(acc + f32(sum * f32(wb.d * xb.d)));
      });
      out[m * N + n] = acc;
    }
  }
  return out;
}

describe('packed matMul kernel, q8 panels (wasm)', () => {
  beforeAll(() => useBackend('wasm'));
  afterEach(() => stopMatMulThreads());

  const random = (shape: [number, number] | [number], seed: number) => tf.randomNormal(shape, 0, 1, 'float32', seed);

  it('packs weights with K a multiple of 32 as q8 panels, a quarter of the f32 bytes plus the scales, and others as before', () => {
    tf.tidy(() => {
      const q8 = packWeights(random([64, 16], 1) as tf.Tensor2D, 'q8') as PackedWeights;
      expect(q8.format).toBe('q8');
      expect(q8.panels?.shape).toEqual([2, 2, 72]);
      expect(q8.bytes).toBe((64 * 16 * 9) / 8);
      // K 48 cannot be cut into blocks of 32: packed with the weights' own values instead.
      const f32Panels = packWeights(random([48, 16], 2) as tf.Tensor2D, 'q8') as PackedWeights;
      expect(f32Panels.format).toBe('f32');
      q8.dispose();
      f32Panels.dispose();
    });
  });

  // One row (decoding), the 2-row tile and its remainder, a prefill; N over several panels.
  const cases = [1, 2, 3, 5, 17].flatMap((M) =>
    [
      [32, 8],
      [96, 24],
      [576, 8 * 13],
    ].map(([K, N]) => [M, K, N] as const),
  );
  it.each(cases)('gives the bits of the same quantized arithmetic in JS, for M %i, K %i, N %i, with and without bias', (M, K, N) => {
    tf.tidy(() => {
      const x = random([M, K], M + K) as tf.Tensor2D;
      // Some exact zeros and a block of zeros: the scale 0 path.
      const wValues = random([K, N], K + N).dataSync() as Float32Array;
      for (let k = 0; k < BLOCK; k++) wValues[k * N] = 0;
      wValues[N + 1] = 0;
      const w = tf.tensor2d(wValues, [K, N]);
      const bias = random([N], N) as tf.Tensor1D;
      const packed = packWeights(w, 'q8') as PackedWeights;
      expect(packed.format).toBe('q8');
      for (const readAhead of [false, true]) {
        const plan = { oneRowTile: 'narrow', oneRowReadAhead: readAhead, rowsReadAhead: readAhead } as const;
        for (const b of [bias, null]) {
          const out = packedMatMul(x, packed, b, plan) as tf.Tensor2D;
          const expected = referenceQ8(x.dataSync() as Float32Array, wValues, b ? (b.dataSync() as Float32Array) : null, M, K, N);
          expect(Array.from(out.dataSync())).toEqual(Array.from(expected));
        }
      }
      packed.dispose();
    });
  });

  it('stays within the quantization error of the f32 product', () => {
    tf.tidy(() => {
      const [M, K, N] = [4, 576, 64];
      const x = random([M, K], 3) as tf.Tensor2D;
      const w = tf.mul(random([K, N], 4), 0.05) as tf.Tensor2D;
      const packed = packWeights(w, 'q8') as PackedWeights;
      const exact = tf.matMul(x, w).dataSync();
      const q8 = (packedMatMul(x, packed) as tf.Tensor2D).dataSync();
      // Each side rounds to 1/254 of its block's largest value; over 576 normal terms that
      // leaves errors of a few percent of the output's scale (about 0.05 * sqrt(576) = 1.2).
      let worst = 0;
      for (let i = 0; i < exact.length; i++) worst = Math.max(worst, Math.abs(exact[i] - q8[i]));
      expect(worst).toBeLessThan(0.06);
      expect(worst).toBeGreaterThan(0);
      packed.dispose();
    });
  });

  it('gives the bits of one thread on 2 threads', async () => {
    const [K, N] = [576, 8 * 61];
    const w = random([K, N], 5) as tf.Tensor2D;
    const bias = random([N], 6) as tf.Tensor1D;
    const alone = packWeights(w, 'q8') as PackedWeights;
    startMatMulThreads(2);
    const shared = packWeights(w, 'q8') as PackedWeights;
    expect(shared.threaded).not.toBeNull();
    expect(shared.format).toBe('q8');
    for (const M of [1, 2, 3, 9]) {
      const x = random([M, K], M) as tf.Tensor2D;
      const one = packedMatMul(x, alone, bias) as tf.Tensor2D;
      const many = packedMatMul(x, shared, bias) as tf.Tensor2D;
      expect(Array.from(many.dataSync())).toEqual(Array.from(one.dataSync()));
      tf.dispose([x, one, many]);
    }
    shared.dispose();
    alone.dispose();
    tf.dispose([w, bias]);
  });
});

describe('a model loaded with q8 weights', () => {
  beforeAll(() => useBackend('wasm'));

  /** log-softmax of one row of logits. */
  const logSoftmax = (row: Float32Array) => {
    const max = row.reduce((m, v) => Math.max(m, v), -Infinity);
    const lse = max + Math.log(row.reduce((s, v) => s + Math.exp(v - max), 0));
    return Array.from(row, (v) => v - lse);
  };

  it('gives logits within the documented bound of f32 (docs/benchmarks.md, q8), and the same on every projection being q8', async () => {
    const dir = makeTiny('q8');
    const f32Model = await loadModel(dir, { inferenceOnly: true });
    const q8Model = await loadModel(dir, { inferenceOnly: true, weights: 'q8' });
    expect(q8Model.model.packedWeights().every((p) => p.format === 'q8')).toBe(true);
    expect(f32Model.model.packedWeights().some((p) => p.format === 'q8')).toBe(false);
    const tokens = [[1, 17, 42, 99, 7, 250, 3, 64, 128, 5, 300, 11]];
    const [a, b] = [f32Model, q8Model].map((lm) => {
      const logits = lm.model.forward(tokens);
      const data = logits.dataSync() as Float32Array;
      logits.dispose();
      return data;
    });
    const V = f32Model.config.vocabSize;
    let maxLogit = 0;
    let maxLogprob = 0;
    for (let t = 0; t < tokens[0].length; t++) {
      const [la, lb] = [a.subarray(t * V, (t + 1) * V), b.subarray(t * V, (t + 1) * V)];
      const [pa, pb] = [logSoftmax(la), logSoftmax(lb)];
      for (let v = 0; v < V; v++) {
        maxLogit = Math.max(maxLogit, Math.abs(la[v] - lb[v]));
        maxLogprob = Math.max(maxLogprob, Math.abs(pa[v] - pb[v]));
      }
    }
    expect(maxLogit).toBeGreaterThan(0);
    expect(maxLogit).toBeLessThan(0.1);
    expect(maxLogprob).toBeLessThan(0.1);
    f32Model.dispose();
    q8Model.dispose();
  });

  it('adds a LoRA adapter on top in f32: the q8 projection plus exactly the adapter\'s output', async () => {
    const dir = makeTiny('q8-lora');
    const lm: LoadedModel = await loadModel(dir, { inferenceOnly: true, weights: 'q8' });
    const tensors: AdapterTensors = initLoraWeights(lm.config, DEFAULT_LORA_SPEC, 1);
    for (const [name, t] of tensors) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.2 * Math.sin(3 * i)));
    const qkv = lm.model.blocks[0].attention.qkv;
    const x = tf.randomNormal([3, lm.config.hiddenSize], 0, 1, 'float32', 9) as tf.Tensor2D;
    const base = qkv.forward(x);
    const attachment = applyAdapter(lm, { spec: DEFAULT_LORA_SPEC, tensors });
    const withAdapter = qkv.forward(x);
    // The adapters' own outputs, in f32, side by side as the fused q|k|v columns.
    const layers = attachment.layers.filter((l) => l.layer === 0 && ['q_proj', 'k_proj', 'v_proj'].includes(l.target));
    const delta = tf.concat(layers.map((l) => l.forward(x)), 1);
    expect(maxAbsDiff(tf.sub(withAdapter, base).dataSync(), delta.dataSync())).toBeLessThan(1e-5);
    expect(tf.max(tf.abs(delta)).dataSync()[0]).toBeGreaterThan(0.1);
    attachment.dispose();
    tf.dispose([x, base, withAdapter, delta]);
    lm.dispose();
  });
});
