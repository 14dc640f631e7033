import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import type { ModelConfig } from '../src/config';
import { GenerationParams } from '../src/generate';
import { drawOnDevice, RowDraw } from '../src/kernels/sample';
import { setFusedKernels } from '../src/kernels/webgpu-program';
import { loadModel } from '../src/loader';
import { PRESETS } from '../src/maker/make-model';
import { attend } from '../src/ops/attention';
import { KVCache, MASKED, SPARE_COLUMNS } from '../src/model/kv-cache';
import { RMSNorm } from '../src/model/llama';
import { Rope } from '../src/model/rope';
import { SeededRandom } from '../src/random';
import { sampleToken } from '../src/sampling';
import { decodeTokens, makeTiny, maxAbsDiff, webgpuUnavailable } from './helpers';

/**
 * The fused WGSL kernels of the webgpu backend (kernels/rms-norm, rope, decode-attention.webgpu,
 * sample) give what the generic tfjs ops give on the same backend: each is run with the
 * kernels on and off (WEBGPU_FUSED_KERNELS) on the same inputs, and tf.profile tells that the
 * kernel, and not the generic path, ran. On lavapipe where there is no GPU (scripts/lib/common.sh
 * ensure_vulkan); in CI (CI=true) a missing adapter fails these tests instead of skipping them.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) {
  console.warn(`webgpu kernel tests skipped: ${unavailable} (install a Vulkan driver: scripts/lib/common.sh ensure_vulkan)`);
}
const suite = unavailable && !inCi ? describe.skip : describe;

/** Values in [-scale, scale), the same for the same seed. */
function random(n: number, seed: number, scale = 1): Float32Array {
  const rng = new SeededRandom(seed);
  return Float32Array.from({ length: n }, () => scale * (2 * rng.next() - 1));
}

/** f's result with the fused kernels on and off, and the names of the kernels each ran. */
async function onAndOff(f: () => tf.Tensor): Promise<{ fused: Float32Array; generic: Float32Array; fusedKernels: string[]; genericKernels: string[] }> {
  const run = async (on: boolean) => {
    setFusedKernels(on);
    let out: tf.Tensor | undefined;
    const profile = await tf.profile(() => {
      out = tf.tidy(f);
      return out;
    });
    const values = (await (out as tf.Tensor).data()) as Float32Array;
    (out as tf.Tensor).dispose();
    return { values, kernels: profile.kernelNames };
  };
  try {
    const fused = await run(true);
    const generic = await run(false);
    return { fused: fused.values, generic: generic.values, fusedKernels: fused.kernels, genericKernels: generic.kernels };
  } finally {
    setFusedKernels(true);
  }
}

/** A "random" source that returns the given draw, as sampleToken sees rng.next(). */
class FixedDraw extends SeededRandom {
  constructor(private readonly u: number) {
    super(0);
  }

  override next(): number {
    return this.u;
  }
}

suite('fused webgpu kernels give the generic tfjs results', () => {
  let before: number;

  beforeAll(async () => {
    const backend = await selectBackend('webgpu');
    if (backend.name !== 'webgpu') throw new Error(`wanted webgpu, got ${backend.name}`);
    before = tf.memory().numTensors;
  }, 60_000);
  afterAll(() => selectBackend('wasm'));

  it('RMSNorm', async () => {
    const [rows, C] = [5, 96];
    const x = tf.tensor2d(random(rows * C, 1, 3), [rows, C]);
    const weight = tf.tensor1d(random(C, 2));
    const eps = tf.scalar(1e-5);
    const norm = new RMSNorm(weight, eps, 1e-5);
    const { fused, generic, fusedKernels, genericKernels } = await onAndOff(() => norm.forward(x));
    tf.dispose([x, weight, eps]);
    expect(fusedKernels).toEqual(['TrainyardRmsNorm']);
    expect(genericKernels).not.toContain('TrainyardRmsNorm');
    expect(maxAbsDiff(fused, generic)).toBeLessThan(1e-5);
  });

  it('RoPE on q and k heads side by side', async () => {
    const config: ModelConfig = { ...PRESETS.tiny, numHeads: 4, numKvHeads: 2, headDim: 16 };
    const rope = new Rope(config);
    const positions = [0, 1, 7, 300, 2047];
    const heads = config.numHeads + config.numKvHeads;
    const { cos, sin } = rope.tables(positions);
    const x = tf.tensor3d(random(positions.length * heads * 16, 3), [positions.length, heads, 16]);
    const { fused, generic, fusedKernels, genericKernels } = await onAndOff(() => rope.apply(x, cos, sin));
    tf.dispose([x, cos, sin]);
    rope.dispose();
    expect(fusedKernels).toEqual(['TrainyardRope']);
    expect(genericKernels).not.toContain('TrainyardRope');
    expect(maxAbsDiff(fused, generic)).toBeLessThan(1e-5);
  });

  // S = 70 spans two of the kernel's 64-key tiles; the mask hides different keys per sequence.
  it.each([
    { B: 3, KV: 2, G: 2, S: 70, D: 16 },
    { B: 2, KV: 1, G: 3, S: 5, D: 100 },
  ])('decode attention over a KV cache, grouped-query: $B rows, $KV KV heads of $G, $S keys, head dim $D', async ({ B, KV, G, S, D }) => {
    const q = tf.tensor2d(random(B * KV * G * D, 4, 0.5), [B, KV * G * D]);
    const k = tf.tensor4d(random(B * KV * S * D, 5), [B, KV, S, D]);
    const v = tf.tensor4d(random(B * KV * S * D, 6), [B, KV, S, D]);
    const m = new Float32Array(B * S);
    for (let b = 0; b < B; b++) for (let s = 0; s < b * 2; s++) m[b * S + s] = MASKED;
    const mask = tf.tensor4d(m, [B, 1, 1, S]);
    const dims = { B, H: KV * G, T: 1, cached: true };
    const { fused, generic, fusedKernels, genericKernels } = await onAndOff(() => attend(q, k, v, mask, dims));
    tf.dispose([q, k, v, mask]);
    // q comes token-major and goes back so: two reshapes around the one dispatch, which move no data.
    expect(fusedKernels.filter((name) => name !== 'Reshape')).toEqual(['TrainyardDecodeAttention']);
    expect(genericKernels).not.toContain('TrainyardDecodeAttention');
    expect(maxAbsDiff(fused, generic)).toBeLessThan(1e-5);
  });

  // A batch wider than the joining row, and one narrower: each side's rows padded on the left in turn.
  it.each([
    { rows: 3, columns: 7, joining: 4 },
    { rows: 2, columns: 3, joining: 9 },
  ])("merges a joining row's cache into a batch's, $rows rows of $columns columns and one of $joining", async ({ rows, columns, joining }) => {
    const [KV, D] = [2, 8];
    /** A one-layer cache of `n` rows of `T` columns, its keys and values drawn from `seed`. */
    const filled = (n: number, T: number, seed: number) => {
      const cache = new KVCache(1, { inPlace: false });
      for (let r = 0; r < n; r++) cache.addEmptyRow();
      cache.append(0, tf.tensor4d(random(n * KV * T * D, seed), [n, KV, T, D]), tf.tensor4d(random(n * KV * T * D, seed + 1), [n, KV, T, D]));
      cache.endStep(T);
      return cache;
    };
    const merged = () => {
      const batch = filled(rows, columns, 7);
      const row = filled(1, joining, 9);
      batch.merge(row);
      const [{ k, v }] = batch.reserve(1, { kvHeads: KV, headDim: D });
      const both = tf.concat([k, v]);
      batch.dispose();
      row.dispose();
      return both;
    };
    const { fused, generic, fusedKernels, genericKernels } = await onAndOff(merged);
    expect(fusedKernels).toContain('TrainyardCacheRows');
    expect(genericKernels).not.toContain('TrainyardCacheRows');
    // Both with the spare columns the next step writes into, zeros where no row has a token: the same bits.
    expect(fused.length).toBe(2 * (rows + 1) * KV * (Math.max(columns, joining) + SPARE_COLUMNS) * D);
    expect(maxAbsDiff(fused, generic)).toBe(0);
  });

  it('draws the tokens sampleToken draws from the same logits and uniform draws, greedy and at temperatures', async () => {
    const V = 1000;
    const rows: RowDraw[] = [
      { temperature: 0, u: 0 },
      { temperature: 1, u: 0.05 },
      { temperature: 0.7, u: 0.5 },
      { temperature: 1.3, u: 0.93 },
      { temperature: 1, u: 0.999 },
    ];
    const values = random(rows.length * V, 7, 4);
    // A tie for the largest logit in the greedy row: the first wins, as sampleToken's argmax.
    values[10] = values[600] = 9;
    const logits = tf.tensor2d(values, [rows.length, V]);
    const drawn = await drawOnDevice(logits, rows);
    logits.dispose();
    expect(drawn).not.toBeNull();
    rows.forEach(({ temperature, u }, row) => {
      const expected = sampleToken(values.subarray(row * V, (row + 1) * V), { temperature }, new FixedDraw(u));
      expect(drawn?.[row].id).toBe(expected.id);
      expect(Math.abs((drawn?.[row].logprob as number) - expected.logprob)).toBeLessThan(1e-5);
    });
    expect(drawn?.[0].id).toBe(10);
  });

  it('decodes a tiny model to the same tokens and logprobs, the next tokens drawn on the GPU or sampled from the logits', async () => {
    const lm = await loadModel(makeTiny('webgpu-kernels'));
    const prompts = [
      [1, 300, 301, 302],
      [1, 5, 6],
      [1, 400, 20, 21, 22],
    ];
    const params: GenerationParams[] = [
      { temperature: 0, maxTokens: 5, ignoreEos: true },
      { temperature: 1, seed: 3, maxTokens: 5, ignoreEos: true },
      { temperature: 0.8, seed: 4, maxTokens: 4, ignoreEos: true },
    ];
    try {
      const drawn = await decodeTokens(lm, prompts, params, 'drawn');
      setFusedKernels(false);
      const sampled = await decodeTokens(lm, prompts, params, 'sampled');
      expect(drawn.map((row) => row.map((t) => t.id))).toEqual(sampled.map((row) => row.map((t) => t.id)));
      drawn.forEach((row, i) => row.forEach((t, j) => expect(Math.abs(t.logprob - sampled[i][j].logprob)).toBeLessThan(1e-5)));
    } finally {
      setFusedKernels(true);
      lm.dispose();
    }
  }, 60_000);

  it('leaks no tensors', () => {
    expect(tf.memory().numTensors - before).toBe(0);
  });
});
