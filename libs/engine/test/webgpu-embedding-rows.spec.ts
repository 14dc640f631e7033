import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { DecodeBatch } from '../src/decode-batch';
import type { StorageDtype } from '../src/dtype';
import { WebGpuDecodeStep } from '../src/kernels/decode-step.webgpu';
import { EMBEDDING_ROWS_KERNEL } from '../src/kernels/embedding-rows.webgpu';
import { countGpuWork } from '../src/kernels/gpu-counters';
import { setFusedKernels } from '../src/kernels/webgpu-program';
import { loadModel, LoadedModel } from '../src/loader';
import type { Preset } from '../src/maker/make-model';
import { argmax } from '../src/sampling';
import { makeTiny, maxAbsDiff, webgpuUnavailable } from './helpers';

/**
 * On webgpu a model's embeddings are read on the GPU, a tied model's from its lm_head, an untied
 * model's from the table's GPU copy: in a pass through tfjs's ops
 * (kernels/embedding-rows.webgpu.ts), the same bits as the host table's rows, for weights held
 * in f32 and in 16 bits, and with Gemma's embedding scale; in the encoded decoding step
 * (decode-step.webgpu.ts, embedShader), with their 1/rms, the logits of the cpu backend. On
 * lavapipe where there is no GPU; in CI a missing adapter fails these tests.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) console.warn(`webgpu embedding tests skipped: ${unavailable}`);
const suite = unavailable && !inCi ? describe.skip : describe;

/** Repeated ids, the first and the last row, in no order. */
const IDS = [5, 0, 511, 5, 300, 1, 42];

/** The model's embeddings of IDS, and the kernels that made them. */
async function embedded(lm: LoadedModel): Promise<{ values: Float32Array; kernels: string[] }> {
  let out: tf.Tensor | undefined;
  const profile = await tf.profile(() => (out = lm.model.embed(IDS)));
  const values = (await (out as tf.Tensor).data()) as Float32Array;
  (out as tf.Tensor).dispose();
  return { values, kernels: profile.kernelNames };
}

suite('embeddings on webgpu', () => {
  beforeAll(async () => {
    await selectBackend('webgpu');
  });

  const cases: [string, Preset, StorageDtype, boolean][] = [
    ['f32 weights', 'tiny-llama3.2', 'F32', true],
    ['bf16 weights', 'tiny-llama3.2', 'BF16', true],
    ['f16 weights', 'tiny-llama3.2', 'F16', true],
    ["Gemma 3's scaled embeddings, bf16", 'tiny-gemma3', 'BF16', true],
    ['an untied f32 table', 'tiny', 'F32', false],
    ['an untied bf16 table', 'tiny', 'BF16', false],
    ['an untied f16 table', 'tiny', 'F16', false],
  ];
  it.each(cases)('%s: the table on the GPU gives the host table rows, bit for bit, with only the ids uploaded', async (_, preset, dtype, tied) => {
    const before = tf.memory().numTensors;
    const lm = await loadModel(makeTiny('embed-gpu', { preset, dtype }));
    try {
      expect(lm.model.config.tieWordEmbeddings).toBe(tied);
      const { values, kernels } = await embedded(lm);
      expect(kernels).toContain(EMBEDDING_ROWS_KERNEL);
      expect(Array.from(values)).toEqual(Array.from(lm.model.embeddingRows(IDS)));
    } finally {
      lm.dispose();
    }
    // The untied table's GPU copy goes with the model.
    expect(tf.memory().numTensors).toBe(before);
  });

  it('copies from the host where the engine kernels are off', async () => {
    const untied = await loadModel(makeTiny('embed-untied', { preset: 'tiny', dtype: 'BF16' }));
    const tied = await loadModel(makeTiny('embed-tied', { preset: 'tiny-llama3.2', dtype: 'BF16' }));
    try {
      setFusedKernels(false);
      for (const lm of [untied, tied]) {
        const generic = await embedded(lm);
        expect(generic.kernels).not.toContain(EMBEDDING_ROWS_KERNEL);
        expect(Array.from(generic.values)).toEqual(Array.from(lm.model.embeddingRows(IDS)));
      }
    } finally {
      setFusedKernels(true);
      untied.dispose();
      tied.dispose();
    }
  });

  it.each([
    ['tiny-llama3.2', 'BF16'],
    ['tiny-gemma3', 'BF16'],
    ['tiny-llama3.2', 'F32'],
    ['tiny', 'BF16'],
    ['tiny', 'F32'],
  ] as [Preset, StorageDtype][])("the encoded step of %s (%s; tiny's table untied) reads its tokens' embeddings on the GPU: the cpu backend's logits", async (preset, dtype) => {
    const dir = makeTiny('embed-step', { preset, dtype });
    const prompts = [
      [1, 30, 31, 32, 33, 34],
      [1, 7, 8],
    ];
    /** Each prompt's logits after joining, then two greedy steps of every row's; on webgpu, the dispatches of the last step. */
    const decode = async (backend: 'cpu' | 'webgpu') => {
      await selectBackend(backend);
      const lm = await loadModel(dir, { inferenceOnly: true });
      const batch = new DecodeBatch<number>(lm.model);
      try {
        const out: Float32Array[] = [];
        const next = new Map<number, number>();
        for (const [id, prompt] of prompts.entries()) {
          out.push(await batch.join(id, prompt));
          next.set(id, argmax(out[out.length - 1]));
        }
        let dispatches = 0;
        for (let s = 0; s < 2; s++) {
          const { result, counts } = await countGpuWork(() => batch.step(next));
          dispatches = counts.dispatches;
          for (const [id, values] of result) {
            out.push(values);
            next.set(id, argmax(values));
          }
        }
        return { out, dispatches, layers: lm.config.numLayers, encoded: backend === 'webgpu' && WebGpuDecodeStep.for(lm.model) !== null };
      } finally {
        batch.dispose();
        lm.dispose();
      }
    };
    const cpu = await decode('cpu');
    const gpu = await decode('webgpu');
    expect(gpu.encoded).toBe(true);
    // The embeddings' dispatch, eight a layer, the lm_head.
    expect(gpu.dispatches).toBe(8 * gpu.layers + 2);
    expect(gpu.out.length).toBe(cpu.out.length);
    cpu.out.forEach((logits, i) => {
      expect(maxAbsDiff(gpu.out[i], logits)).toBeLessThan(1e-5);
      expect(argmax(gpu.out[i])).toBe(argmax(logits));
    });
  }, 120_000);

  it('refuses an id outside the vocabulary before anything runs', async () => {
    const lm = await loadModel(makeTiny('embed-range', { preset: 'tiny-llama3.2' }));
    try {
      const before = tf.memory().numTensors;
      expect(() => lm.model.embed([1, 512])).toThrow('token id 512 out of range [0, 512)');
      expect(() => lm.model.embed([1.5])).toThrow('token id 1.5 out of range');
      expect(tf.memory().numTensors).toBe(before);
    } finally {
      lm.dispose();
    }
  });
});
