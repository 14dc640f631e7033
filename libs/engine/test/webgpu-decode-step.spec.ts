import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import type { ModelConfig } from '../src/config';
import { DecodeBatch } from '../src/decode-batch';
import type { GenerationParams } from '../src/generate';
import { columnSplits, setColumnSplits, setStepProducts, WebGpuDecodeStep } from '../src/kernels/decode-step.webgpu';
import { flatGrid } from '../src/kernels/decode-step.wgsl';
import { countGpuWork, gpuPrototype, wrapMethod } from '../src/kernels/gpu-counters';
import { PRODUCT_TILES, setProductTiles } from '../src/kernels/tiled-product.wgsl';
import { setFusedKernels } from '../src/kernels/webgpu-program';
import { loadModel } from '../src/loader';
import { applyAdapter } from '../src/lora/lora-layer';
import { LoraRouter } from '../src/lora/lora-router';
import { AdapterTensors, LoraSpec, loraTensorShapes } from '../src/lora/peft';
import { SeededRandom } from '../src/random';
import { SPARE_COLUMNS } from '../src/model/kv-cache';
import { argmax } from '../src/sampling';
import { decodeTokens, evenTokensOnly, makeTiny, maxAbsDiff, webgpuUnavailable } from './helpers';

/**
 * A decoding step encoded whole on webgpu (kernels/decode-step.webgpu.ts) computes what the
 * cpu backend's forward pass computes: the same logits to 1e-5 and the same greedy tokens,
 * step after step, with rows joining and leaving between steps, rows of different lengths, a
 * cache that outgrows its spare columns, and Qwen2's q/k/v bias with tied embeddings. And it is
 * the cheap step it claims: a bounded number of dispatches a layer, one submit and 8 bytes read
 * back a row. On lavapipe where there is no GPU; in CI a missing adapter fails these tests.
 */
const unavailable = webgpuUnavailable();
const inCi = process.env['CI'] === 'true';
if (unavailable && !inCi) console.warn(`webgpu decode step tests skipped: ${unavailable}`);
const suite = unavailable && !inCi ? describe.skip : describe;

/** What happens to the batch before each step: who joins with which prompt, who leaves. */
interface Script {
  joins: Map<number, [number, number[]][]>;
  leaves: Map<number, number[]>;
  steps: number;
}

/** An adapter of `spec` whose A and B are both random (PEFT's B = 0 would make it the base model). */
function randomAdapter(dir: string, spec: LoraSpec): { spec: LoraSpec; tensors: AdapterTensors } {
  const rng = new SeededRandom(11);
  const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, number>;
  const shapes = loraTensorShapes(
    {
      numLayers: config['num_hidden_layers'],
      hiddenSize: config['hidden_size'],
      intermediateSize: config['intermediate_size'],
      numHeads: config['num_attention_heads'],
      numKvHeads: config['num_key_value_heads'],
      headDim: config['head_dim'] ?? config['hidden_size'] / config['num_attention_heads'],
    } as ModelConfig,
    spec,
  );
  const tensors: AdapterTensors = new Map([...shapes].map(([name, shape]) => [name, { shape, data: Float32Array.from({ length: shape[0] * shape[1] }, () => 0.2 * (2 * rng.next() - 1)) }]));
  return { spec, tensors };
}

/** Each join's logits (its prompt's last), then every step's logits of every member, in member order. */
async function run(dir: string, script: Script, adapter?: { spec: LoraSpec; tensors: AdapterTensors }): Promise<Float32Array[][]> {
  const lm = await loadModel(dir);
  const attached = adapter ? applyAdapter(lm, adapter) : null;
  const batch = new DecodeBatch<number>(lm.model);
  const out: Float32Array[][] = [];
  try {
    const next = new Map<number, number>();
    for (let step = 0; step < script.steps; step++) {
      for (const id of script.leaves.get(step) ?? []) {
        batch.leave(id);
        next.delete(id);
      }
      for (const [id, prompt] of script.joins.get(step) ?? []) {
        const logits = await batch.join(id, prompt);
        out.push([logits]);
        next.set(id, argmax(logits));
      }
      const logits = await batch.step(next);
      out.push(batch.ids.map((id) => logits.get(id) as Float32Array));
      for (const [id, values] of logits) next.set(id, argmax(values));
    }
  } finally {
    batch.dispose();
    attached?.dispose();
    lm.dispose();
  }
  return out;
}

async function onBoth(dir: string, script: Script, adapter?: { spec: LoraSpec; tensors: AdapterTensors }): Promise<{ cpu: Float32Array[][]; gpu: Float32Array[][] }> {
  await selectBackend('cpu');
  const cpu = await run(dir, script, adapter);
  await selectBackend('webgpu');
  const gpu = await run(dir, script, adapter);
  return { cpu, gpu };
}

function expectSame(cpu: Float32Array[][], gpu: Float32Array[][]): void {
  expect(gpu.length).toBe(cpu.length);
  cpu.forEach((rows, step) => {
    expect(gpu[step].length).toBe(rows.length);
    rows.forEach((logits, row) => {
      expect(maxAbsDiff(gpu[step][row], logits)).toBeLessThan(1e-5);
      expect(argmax(gpu[step][row])).toBe(argmax(logits));
    });
  });
}

/** The layers of the model in `dir`. */
function layersOf(dir: string): number {
  return (JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, number>)['num_hidden_layers'];
}

/**
 * Runs `script` on the cpu backend, then on webgpu with the attention's columns split among
 * workgroups where a step allows it (columnSplits) and again without: both runs give the cpu's
 * logits. Returns how many more dispatches the split run made.
 */
async function extraSplitDispatches(dir: string, script: Script): Promise<number> {
  await selectBackend('cpu');
  const cpu = await run(dir, script);
  await selectBackend('webgpu');
  const split = await countGpuWork(() => run(dir, script));
  expectSame(cpu, split.result);
  setColumnSplits(false);
  try {
    const whole = await countGpuWork(() => run(dir, script));
    expectSame(cpu, whole.result);
    return split.counts.dispatches - whole.counts.dispatches;
  } finally {
    setColumnSplits(true);
  }
}

suite('a decoding step encoded whole on webgpu', () => {
  afterAll(() => selectBackend('wasm'));

  it('gives the cpu backend logits while rows join, leave and outgrow the spare columns', async () => {
    // A prompt of more than one prefill chunk (256 tokens) too.
    const long = Array.from({ length: 300 }, (_, i) => 1 + ((i * 37) % 500));
    const script: Script = {
      joins: new Map([
        [0, [[0, [1, 300, 301, 302]], [1, [1, 5]], [4, long]]],
        [3, [[2, [1, 400, 20, 21, 22, 23, 24]]]],
        // In the row of 1, which leaves at the same step.
        [5, [[5, [1, 9, 8, 7]]]],
        [SPARE_COLUMNS + 2, [[3, [1, 9, 8]]]],
      ]),
      leaves: new Map([[5, [1]]]),
      steps: SPARE_COLUMNS + 6,
    };
    const { cpu, gpu } = await onBoth(makeTiny('decode-step'), script);
    expectSame(cpu, gpu);
  }, 120_000);

  it("gives the cpu backend logits with a long cache's columns split among workgroups, in one dispatch a layer more", async () => {
    // Rows of about 600, 300 and 3 columns: 3 rows x 4 heads take 2 splits of the columns, 320 and about 280 (whole blocks of 64).
    const prompt = (length: number, seed: number) => Array.from({ length }, (_, i) => 1 + ((i * seed) % 500));
    const script: Script = { joins: new Map([[0, [[0, prompt(600, 37)], [1, [1, 5, 6]], [2, prompt(300, 29)]]]]), leaves: new Map([[2, [1]]]), steps: 3 };
    const dir = makeTiny('decode-step-columns');
    expect(columnSplits(3 * 4, 600)).toBe(2);
    // Each of the 3 decoding steps, and the long prompt's last two chunks (16 workgroups over 512 and 600 columns: 2 splits), made one dispatch a layer more: the parts' sum.
    expect(await extraSplitDispatches(dir, script)).toBe((3 + 2) * layersOf(dir));
  }, 120_000);

  it("gives the cpu backend logits with a long prompt's later chunks' columns split among workgroups, in one dispatch a layer more each", async () => {
    // 1,100 tokens in chunks of 256, each a tile of 64 tokens a workgroup for each of 4 heads (16 workgroups, 8 for the last chunk's 76 tokens):
    // the first chunk (256 columns) takes no split, the next two 2, the last two 4 (whole blocks of keys, so an early tile's last split is short).
    const prompt = Array.from({ length: 1100 }, (_, i) => 1 + ((i * 41) % 500));
    const script: Script = { joins: new Map([[0, [[0, prompt]]]]), leaves: new Map(), steps: 2 };
    const dir = makeTiny('decode-step-prompt-columns');
    expect([256, 512, 768, 1024].map((columns) => columnSplits(16, columns))).toEqual([1, 2, 2, 4]);
    expect(columnSplits(8, 1100)).toBe(4);
    // Four of the prompt's five chunks and both decoding steps (4 workgroups over 1,100 columns) made one dispatch a layer more.
    expect(await extraSplitDispatches(dir, script)).toBe((4 + 2) * layersOf(dir));
  }, 120_000);

  it('writes a row that joins in place of one that left into the batch\'s cache, so that neither it nor the step after it makes a bind group', async () => {
    await selectBackend('webgpu');
    const lm = await loadModel(makeTiny('decode-step'));
    const batch = new DecodeBatch<number>(lm.model);
    const next = () => new Map(batch.ids.map((id) => [id, 7]));
    try {
      for (const id of [0, 1, 2]) await batch.join(id, [1, 30 + id, 31, 32, 33]);
      await batch.step(next());
      await batch.step(next());
      batch.leave(1);
      await batch.join(3, [1, 40, 41]);
      expect(batch.ids).toEqual([0, 3, 2]);
      const inPlace = await countGpuWork(() => batch.step(next()));
      expect(inPlace.counts.bindGroups).toBe(0);
      // Another prompt of that length joins where 3 leaves: its prefill, the write and the step bind what the first one's did.
      batch.leave(3);
      const again = await countGpuWork(async () => {
        await batch.join(5, [1, 42, 43]);
        await batch.step(next());
      });
      expect(batch.ids).toEqual([0, 5, 2]);
      expect(again.counts.bindGroups).toBe(0);
      // With no row left over, a row joins after the others, in new tensors the step binds.
      await batch.join(4, [1, 50]);
      const appended = await countGpuWork(() => batch.step(next()));
      expect(appended.counts.bindGroups).toBeGreaterThan(0);
    } finally {
      batch.dispose();
      lm.dispose();
    }
  }, 60_000);

  it('shares one step between the batches of a model, which decode at once as each alone, and releases it with the model', async () => {
    await selectBackend('webgpu');
    const lm = await loadModel(makeTiny('decode-step'));
    /** A batch of its own for `prompt`: its logits after joining, then after each of 3 greedy steps. */
    const alone = async (prompt: number[]): Promise<Float32Array[]> => {
      const batch = new DecodeBatch<number>(lm.model);
      try {
        const logits = [await batch.join(0, prompt)];
        for (let s = 0; s < 3; s++) logits.push((await batch.step(new Map([[0, argmax(logits[logits.length - 1])]]))).get(0) as Float32Array);
        return logits;
      } finally {
        batch.dispose();
      }
    };
    const prompts = [
      [1, 30, 31, 32],
      [1, 7, 8, 9, 10, 11],
    ];
    const second = await countGpuWork(() => alone(prompts[1]));
    const step = WebGpuDecodeStep.for(lm.model);
    const first = await countGpuWork(() => alone(prompts[0]));
    // The batch left the model's step as it was, and the next batch (no longer prompt) bound only its own cache.
    expect(WebGpuDecodeStep.for(lm.model)).toBe(step);
    expect(first.counts.bindGroups).toBeLessThan(second.counts.bindGroups);
    // Two batches at once, each step's readback its own: the logits of each alone.
    const together = await Promise.all(prompts.map((prompt) => alone(prompt)));
    together.forEach((logits, i) => logits.forEach((values, s) => expect(maxAbsDiff(values, [first, second][i].result[s])).toBe(0)));
    const released = await countGpuWork(async () => lm.dispose());
    expect(released.counts.destroyedBuffers).toBeGreaterThan(0);
  }, 60_000);

  it("gives the cpu backend logits with a prompt chunk's and a batch of 64 rows' products in tiles of 32, 64 and 128, weights in f32 and bf16, with and without a LoRA adapter", async () => {
    // A prompt of 100 tokens (its products in tiles, q|k|v's and gate|up's K of 128 in two splits, down's 200 in two of 112 and 88), one of 3 (split: under a tile's rows), then a decoding step of 2 rows (split).
    const long = Array.from({ length: 100 }, (_, i) => 1 + ((i * 41) % 500));
    const prompt: Script = { joins: new Map([[0, [[0, long], [1, [1, 5, 6]]]]]), leaves: new Map(), steps: 1 };
    // 64 prompts of 2 tokens (split), then two decoding steps of 64 rows (in tiles).
    const wide: Script = { joins: new Map([[0, Array.from({ length: 64 }, (_, i): [number, number[]] => [i, [1 + i, 2 + ((i * 7) % 300)]])]]), leaves: new Map(), steps: 2 };
    // The code of every program a run dispatched (pipelines are kept across models, so this follows each pipeline back to its module's code).
    await selectBackend('webgpu');
    const codeOf = new WeakMap<object, string>();
    const dispatched = new Set<string>();
    const unwraps = [
      wrapMethod(gpuPrototype('GPUDevice'), 'createShaderModule', (call, _self, args) => {
        const module = call() as object;
        codeOf.set(module, (args[0] as GPUShaderModuleDescriptor).code);
        return module;
      }),
      wrapMethod(gpuPrototype('GPUDevice'), 'createComputePipeline', (call, _self, args) => {
        const pipeline = call() as object;
        codeOf.set(pipeline, codeOf.get((args[0] as GPUComputePipelineDescriptor).compute.module) ?? '');
        return pipeline;
      }),
      wrapMethod(gpuPrototype('GPUComputePassEncoder'), 'setPipeline', (call, _self, args) => {
        dispatched.add(codeOf.get(args[0] as object) ?? '');
        return call();
      }),
    ];
    // How many of the programs a run dispatched are products in tiles of that side: their staging of both operands is in the code.
    const tiledPrograms = async (tile: number, dir: string, script: Script, adapter?: { spec: LoraSpec; tensors: AdapterTensors }) => {
      dispatched.clear();
      const logits = await run(dir, script, adapter);
      // A tile's right operand staged 16 steps deep, in vectors of some width: 16 x tile floats.
      const stagedFloats = (code: string) => {
        const [, width, count] = /var<workgroup> rs : array<vec(\d)<f32>, (\d+)>;/.exec(code) ?? [];
        return Number(width) * Number(count);
      };
      return { logits, tiled: [...dispatched].filter((code) => code.includes('struct Dims { M : u32,') && stagedFloats(code) === 16 * tile).length };
    };
    setStepProducts('tiled');
    try {
      for (const dtype of ['F32', 'BF16'] as const) {
        const dir = makeTiny(`decode-step-tiled-${dtype}`, { dtype, normWeights: 'near-ones', overrides: { modelType: 'qwen2', tieWordEmbeddings: true, hiddenSize: 128, intermediateSize: 200 } });
        // In f32, again with an adapter on every projection: q|k|v and gate|up add (x A) B in their first split's store, o and down make x A over each split of K (2 of o's 128, of down's 200) in workgroups of their own dispatch.
        const adapters = dtype === 'F32' ? [undefined, randomAdapter(dir, { r: 4, alpha: 8, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] })] : [undefined];
        for (const adapter of adapters) {
          await selectBackend('cpu');
          const cpu = await run(dir, prompt, adapter);
          const wideOnCpu = await run(dir, wide, adapter);
          await selectBackend('webgpu');
          for (const tile of PRODUCT_TILES) {
            setProductTiles(tile);
            for (const [script, onCpu] of [[prompt, cpu], [wide, wideOnCpu]] as const) {
              const { logits, tiled } = await tiledPrograms(tile, dir, script, adapter);
              expectSame(onCpu, logits);
              // The step's four products ran in tiles of that side.
              expect(tiled).toBe(4);
            }
          }
          if (adapter) {
            // The adapter changes the logits: the comparison is not of two base models.
            await selectBackend('cpu');
            const last = wideOnCpu.length - 1;
            expect(maxAbsDiff((await run(dir, wide))[last][0], wideOnCpu[last][0])).toBeGreaterThan(1e-3);
          }
        }
      }
    } finally {
      unwraps.forEach((unwrap) => unwrap());
      setStepProducts('split');
      setProductTiles('auto');
    }
  }, 300_000);

  it("gives the cpu backend logits with Qwen2's q/k/v bias, tied embeddings and Qwen2.5-1.5B's heads of 128, and with heads of 256", async () => {
    // A prompt of 40 tokens: tiles of 8 queries reading blocks of 32 keys (heads of 128, in lavapipe's 32 KB of workgroup memory), of 4 reading blocks of 16 (256).
    const prompt = Array.from({ length: 40 }, (_, i) => 1 + ((i * 29) % 400));
    const script: Script = { joins: new Map([[0, [[0, [1, 30, 31]], [1, prompt]]]]), leaves: new Map(), steps: 4 };
    for (const headDim of [128, 256]) {
      const overrides = { modelType: 'qwen2' as const, tieWordEmbeddings: true, hiddenSize: 256, numHeads: 2, numKvHeads: 1, headDim };
      const { cpu, gpu } = await onBoth(makeTiny(`decode-step-qwen2-${headDim}`, { overrides }), script);
      expectSame(cpu, gpu);
    }
  }, 120_000);

  it("gives the cpu backend logits with Qwen3's q and k norms, in eight dispatches a layer", async () => {
    // A prompt of three chunks (RoPE apart from attention, each head RMSNorm'd first), then decoding steps (in attention, its columns in two splits).
    const long = Array.from({ length: 530 }, (_, i) => 1 + ((i * 53) % 500));
    const script: Script = { joins: new Map([[0, [[0, [1, 30, 31]], [1, long]]]]), leaves: new Map(), steps: 3 };
    const dir = makeTiny('decode-step-qwen3', { preset: 'tiny-qwen3' });
    const { cpu, gpu } = await onBoth(dir, script);
    expectSame(cpu, gpu);
    // The encoded step ran them: a Qwen3 step is the step's own dispatches, not the generic ops'.
    const lm = await loadModel(dir);
    const batch = new DecodeBatch<number>(lm.model);
    try {
      expect(lm.config.qkNorm).toBe(true);
      expect(columnSplits(2 * lm.config.numHeads, long.length)).toBe(2);
      expect(WebGpuDecodeStep.fits(lm.model)).toBe(true);
      const next = new Map([[0, argmax(await batch.join(0, [1, 2, 3]))]]);
      await batch.step(next);
      const { counts } = await countGpuWork(() => batch.step(next));
      // The embeddings' dispatch, eight a layer, the lm_head.
      expect(counts.dispatches).toBe(8 * lm.config.numLayers + 2);
    } finally {
      batch.dispose();
      lm.dispose();
    }
  }, 120_000);

  it("gives the cpu backend logits with Gemma 3's norms, GeGLU and sliding window, with and without a LoRA adapter", async () => {
    // Rows longer than the tiny preset's 8-position window; prompts through RoPE's program, then decoding steps.
    const script: Script = { joins: new Map([[0, [[0, Array.from({ length: 12 }, (_, i) => 2 + i * 31)], [1, [2, 7, 8]]]]]), leaves: new Map(), steps: 9 };
    const dir = makeTiny('decode-step-gemma3', { preset: 'tiny-gemma3' });
    const base = await onBoth(dir, script);
    expectSame(base.cpu, base.gpu);
    const adapted = await onBoth(dir, script, randomAdapter(dir, { r: 4, alpha: 8, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] }));
    expectSame(adapted.cpu, adapted.gpu);
    expect(maxAbsDiff(base.gpu[2][0], adapted.gpu[2][0])).toBeGreaterThan(1e-3);
    const lm = await loadModel(dir);
    try {
      expect(WebGpuDecodeStep.fits(lm.model)).toBe(true);
    } finally {
      lm.dispose();
    }
  }, 120_000);

  it('gives the cpu backend logits with a LoRA adapter on some parts of the fused projections', async () => {
    const dir = makeTiny('decode-step-lora');
    const adapter = randomAdapter(dir, { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'] });
    const script: Script = { joins: new Map([[0, [[0, [1, 30, 31]], [1, [1, 7, 8, 9, 10]]]]]), leaves: new Map(), steps: 3 };
    const { cpu, gpu } = await onBoth(dir, script, adapter);
    expectSame(cpu, gpu);
    // The adapter changes the logits: the comparison is not of two base models.
    const base = await onBoth(dir, script);
    expect(maxAbsDiff(base.gpu[2][0], gpu[2][0])).toBeGreaterThan(1e-3);
  }, 60_000);

  it('gives the cpu backend logits when an adapter is attached to a decoding batch and detached again', async () => {
    // The step keeps each shape's dispatches between steps: attaching and detaching an adapter must change what it records.
    const dir = makeTiny('decode-step-lora');
    const adapter = randomAdapter(dir, { r: 4, alpha: 8, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] });
    const onAndOff = async (): Promise<Float32Array[]> => {
      const lm = await loadModel(dir);
      const batch = new DecodeBatch<number>(lm.model);
      const out: Float32Array[] = [];
      try {
        let next = argmax(await batch.join(0, [1, 30, 31]));
        const step = async () => {
          const logits = (await batch.step(new Map([[0, next]]))).get(0) as Float32Array;
          out.push(logits);
          next = argmax(logits);
        };
        await step();
        const attached = applyAdapter(lm, adapter);
        await step();
        await step();
        attached.dispose();
        await step();
        await step();
      } finally {
        batch.dispose();
        lm.dispose();
      }
      return out;
    };
    await selectBackend('cpu');
    const cpu = await onAndOff();
    await selectBackend('webgpu');
    const gpu = await onAndOff();
    expectSame([cpu], [gpu]);
  }, 60_000);

  it('gives the cpu backend logits with two adapters and the base model sharing a batch row by row', async () => {
    const dir = makeTiny('decode-step-routed');
    const specs: LoraSpec[] = [
      { r: 4, alpha: 8, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] },
      { r: 4, alpha: 4, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] },
    ];
    const adapters = specs.map((spec) => randomAdapter(dir, spec));
    // Row i's adapter: the first, none, the second.
    const prompts = [
      [1, 30, 31],
      [1, 7, 8, 9],
      [1, 40, 41, 42, 43],
    ];
    const routed = async (backend: 'cpu' | 'webgpu') => {
      await selectBackend(backend);
      const lm = await loadModel(dir);
      const attached = adapters.map((adapter) => applyAdapter(lm, adapter));
      attached.forEach((a) => a.detach());
      const rowAdapter = [attached[0], null, attached[1]];
      const router = new LoraRouter(lm.model);
      const batch = new DecodeBatch<number>(lm.model);
      const out: Float32Array[] = [];
      try {
        const next = new Map<number, number>();
        for (const [i, prompt] of prompts.entries()) {
          router.route([rowAdapter[i]]);
          next.set(i, argmax(await batch.join(i, prompt)));
        }
        for (let step = 0; step < 3; step++) {
          router.route(rowAdapter);
          const logits = await batch.step(next);
          for (const [id, values] of logits) {
            out.push(values);
            next.set(id, argmax(values));
          }
        }
        router.route(rowAdapter);
        const greedy = new Map(prompts.map((_, i) => [i, { temperature: 0, u: 0 }]));
        const { counts } = await countGpuWork(() => batch.stepDrawn(next, greedy));
        return { out, dispatches: counts.dispatches, layers: lm.config.numLayers };
      } finally {
        batch.dispose();
        router.dispose();
        attached.forEach((a) => a.dispose());
        lm.dispose();
      }
    };
    const cpu = await routed('cpu');
    const gpu = await routed('webgpu');
    // The routed rows ran in the encoded step: its dispatches, not tfjs's.
    expect(gpu.dispatches).toBe(10 * gpu.layers + 3);
    expect(gpu.out.length).toBe(cpu.out.length);
    cpu.out.forEach((logits, i) => expect(maxAbsDiff(gpu.out[i], logits)).toBeLessThan(1e-5));
  }, 120_000);

  it("profiles a long prompt's chunk that splits its columns, with an adapter: each dispatch timed", async () => {
    await selectBackend('webgpu');
    const dir = makeTiny('decode-step-profile');
    const lm = await loadModel(dir);
    const attached = applyAdapter(lm, randomAdapter(dir, { r: 4, alpha: 8, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] }));
    const step = WebGpuDecodeStep.for(lm.model) as WebGpuDecodeStep;
    const cache = lm.model.newCache();
    cache.addEmptyRow();
    try {
      const prompt = Array.from({ length: 600 }, (_, i) => 1 + ((i * 43) % 500));
      step.advance(cache, [prompt.slice(0, 256)]);
      step.advance(cache, [prompt.slice(256, 512)]);
      // The last 88 tokens over 600 columns: RoPE, attention in 2 splits and their sum, and x A before q|k|v and gate|up: 12 dispatches a layer.
      const spent = (await step.profile(cache, [prompt.slice(512)])) as Record<string, number>;
      expect(Object.keys(spent).sort()).toEqual(['attention', 'attention_combine', 'down', 'embed', 'gate_up', 'gate_up_lora_a', 'lm_head', 'o', 'qkv', 'qkv_lora_a', 'residual', 'rope', 'swiglu']);
      for (const us of Object.values(spent)) expect(us).toBeGreaterThanOrEqual(0);
    } finally {
      cache.dispose();
      attached.dispose();
      lm.dispose();
    }
  }, 120_000);

  it('makes eight dispatches a layer (ten with LoRA) and three more, one submit, and reads back 8 bytes a row', async () => {
    await selectBackend('webgpu');
    const before = tf.memory().numTensors;
    const dir = makeTiny('decode-step-counts');
    const lm = await loadModel(dir);
    const batch = new DecodeBatch<number>(lm.model);
    const rows = 3;
    try {
      const next = new Map<number, number>();
      for (let i = 0; i < rows; i++) next.set(i, argmax(await batch.join(i, [1, 10 + i, 20 + i])));
      const greedy = new Map(Array.from({ length: rows }, (_, i) => [i, { temperature: 0, u: 0 }]));
      await batch.stepDrawn(next, greedy); // the first step compiles and grows the cache
      const { counts } = await countGpuWork(() => batch.stepDrawn(next, greedy));
      // The embeddings' dispatch, the layers', the lm_head and the draw.
      expect(counts).toMatchObject({ dispatches: 8 * lm.config.numLayers + 3, submits: 1, readBytes: 8 * rows });
      // With an adapter on every projection: q|k|v's and gate|up's x A are products of their own; o and down make theirs.
      const adapter = applyAdapter(lm, randomAdapter(dir, { r: 8, alpha: 16, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] }));
      await batch.stepDrawn(next, greedy);
      const lora = await countGpuWork(() => batch.stepDrawn(next, greedy));
      adapter.dispose();
      expect(lora.counts).toMatchObject({ dispatches: 10 * lm.config.numLayers + 3, submits: 1, readBytes: 8 * rows });
      // The GPU profile times every one of them (a timestamp pair each), where the adapter offers timestamps.
      const step = WebGpuDecodeStep.for(lm.model) as WebGpuDecodeStep;
      const cache = lm.model.newCache();
      cache.addEmptyRow();
      const attached = applyAdapter(lm, randomAdapter(dir, { r: 8, alpha: 16, targetModules: ['q_proj', 'o_proj', 'up_proj', 'down_proj'] }));
      try {
        step.advance(cache, [[1, 2, 3]]);
        const spent = await step.profile(cache, [[4]]);
        if (spent) {
          expect(Object.keys(spent).sort()).toEqual(['down', 'embed', 'gate_up', 'gate_up_lora_a', 'lm_head', 'o', 'qkv', 'qkv_lora_a', 'residual', 'rope_attention', 'swiglu']);
          expect(Object.values(spent).every((us) => Number.isFinite(us) && us >= 0)).toBe(true);
          expect(Object.values(spent).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
          // A prompt's chunk runs RoPE apart from attention: the most dispatches a layer records, each timed too.
          const chunk = (await step.profile(cache, [[5, 6]])) as Record<string, number>;
          expect(Object.keys(chunk).sort()).toEqual(['attention', 'down', 'embed', 'gate_up', 'gate_up_lora_a', 'lm_head', 'o', 'qkv', 'qkv_lora_a', 'residual', 'rope', 'swiglu']);
          expect(Object.values(chunk).every((us) => Number.isFinite(us) && us >= 0)).toBe(true);
        }
      } finally {
        attached.dispose();
        cache.dispose();
      }
      // A row leaves and another joins: the step after it copies no layer to grow it (the merge
      // left spare columns) and makes one bind group a layer, for the decoding step's program
      // over the merged cache; the merge, which tfjs recorded, is submitted first.
      batch.leave(0);
      next.delete(0);
      next.set(rows, argmax(await batch.join(rows, [1, 40, 41, 42])));
      const joined = await countGpuWork(() => batch.stepDrawn(next, new Map([...next.keys()].map((id) => [id, { temperature: 0, u: 0 }]))));
      expect(joined.counts).toMatchObject({ dispatches: 8 * lm.config.numLayers + 3, bindGroups: lm.config.numLayers, submits: 2, readBytes: 8 * rows });
      setFusedKernels(false);
      const generic = await countGpuWork(() => batch.stepDrawn(next, new Map([...next.keys()].map((id) => [id, { temperature: 0, u: 0 }]))));
      expect(generic.counts.dispatches).toBeGreaterThan(counts.dispatches);
    } finally {
      setFusedKernels(true);
      batch.dispose();
      lm.dispose();
    }
    expect(tf.memory().numTensors).toBe(before);
  }, 120_000);

  it.each([
    ['tied', true],
    ['untied', false],
  ])('draws several steps fed on the GPU, embeddings %s: the tokens of as many single steps, a submit each and one read at the end', async (name, tied) => {
    await selectBackend('webgpu');
    const dir = makeTiny(`decode-step-fed-${name}`, { dtype: 'BF16', overrides: { tieWordEmbeddings: tied } });
    const lm = await loadModel(dir);
    const rows = 3;
    const steps = 4;
    const rng = new SeededRandom(5);
    // Row 0 greedy, the others sampled hot enough that their tokens depend on the draws.
    const draws = Array.from({ length: steps }, () => new Map(Array.from({ length: rows }, (_, i) => [i, { temperature: i === 0 ? 0 : 1.5, u: rng.next() }])));
    const decode = async (chained: boolean) => {
      const batch = new DecodeBatch<number>(lm.model);
      try {
        const next = new Map<number, number>();
        for (let i = 0; i < rows; i++) next.set(i, argmax(await batch.join(i, [1, 10 + i, 20 + 7 * i])));
        // A first step grows the merged cache (tfjs's work, a submit of its own) before the steps compared.
        for (const [i, token] of await batch.stepDrawn(next, new Map([...next.keys()].map((i) => [i, { temperature: 0, u: 0 }])))) next.set(i, token.id);
        if (chained) {
          const { result, counts } = await countGpuWork(() => batch.stepsDrawn(next, draws));
          return { tokens: result, counts };
        }
        const tokens = [];
        for (const stepDraws of draws) {
          const drawn = await batch.stepDrawn(next, stepDraws);
          tokens.push(drawn);
          for (const [i, token] of drawn) next.set(i, token.id);
        }
        return { tokens, counts: null };
      } finally {
        batch.dispose();
      }
    };
    try {
      expect(lm.config.tieWordEmbeddings).toBe(tied);
      const single = await decode(false);
      const chained = await decode(true);
      expect(chained.tokens.map((step) => [...step.values()].map((t) => t.id))).toEqual(single.tokens.map((step) => [...step.values()].map((t) => t.id)));
      chained.tokens.forEach((step, k) => step.forEach((token, i) => expect(Math.abs(token.logprob - (single.tokens[k].get(i)?.logprob ?? NaN))).toBeLessThan(1e-5)));
      // The sampled rows' tokens differ from step to step: they were fed back, not repeated.
      expect(new Set(chained.tokens.map((step) => step.get(1)?.id)).size).toBeGreaterThan(1);
      // Each step: the embeddings read on the GPU (from the tied lm_head, or the untied table's copy), eight a layer, the lm_head and the draw.
      expect(chained.counts).toMatchObject({ dispatches: steps * (8 * lm.config.numLayers + 3), submits: steps, reads: 1, readBytes: steps * 8 * rows });
    } finally {
      lm.dispose();
    }
  }, 120_000);

  it('starts a run fed on the GPU before the last is read back: the tokens of as many single steps, a read a run', async () => {
    await selectBackend('webgpu');
    const lm = await loadModel(makeTiny('decode-step-ahead'));
    const rows = 3;
    const rng = new SeededRandom(9);
    const draws = Array.from({ length: 6 }, () => new Map(Array.from({ length: rows }, (_, i) => [i, { temperature: i === 0 ? 0 : 1.5, u: rng.next() }])));
    const joined = async (batch: DecodeBatch<number>) => {
      const next = new Map<number, number>();
      for (let i = 0; i < rows; i++) next.set(i, argmax(await batch.join(i, [1, 30 + i, 60 + 5 * i])));
      // A first step grows the merged cache (tfjs's work, a submit of its own) before the runs counted.
      for (const [i, token] of await batch.stepDrawn(next, new Map([...next.keys()].map((i) => [i, { temperature: 0, u: 0 }])))) next.set(i, token.id);
      return next;
    };
    const single = new DecodeBatch<number>(lm.model);
    const ahead = new DecodeBatch<number>(lm.model);
    const other = new DecodeBatch<number>(lm.model);
    try {
      const next = await joined(single);
      const expected: number[][] = [];
      for (const stepDraws of draws) {
        const drawn = await single.stepDrawn(next, stepDraws);
        expected.push([...drawn.values()].map((t) => t.id));
        for (const [i, token] of drawn) next.set(i, token.id);
      }
      const feed = await joined(ahead);
      const { result, counts } = await countGpuWork(async () => {
        const first = ahead.stepsDrawn(feed, draws.slice(0, 3));
        // Recorded and submitted already: the next run follows it before its tokens come back.
        expect(ahead.continuesOnGpu).toBe(true);
        const second = ahead.stepsDrawnAfter(draws.slice(3));
        return [...(await first), ...(await second)];
      });
      expect(result.map((step) => [...step.values()].map((t) => t.id))).toEqual(expected);
      expect(counts).toMatchObject({ submits: 6, reads: 2 });
      expect(ahead.continuesOnGpu).toBe(true);
      // Another batch's step on the model's shared step overwrites the ids in place.
      const otherNext = new Map([[0, argmax(await other.join(0, [1, 2, 3]))]]);
      await other.stepDrawn(otherNext, new Map([[0, { temperature: 0, u: 0 }]]));
      expect(ahead.continuesOnGpu).toBe(false);
      await expect(ahead.stepsDrawnAfter(draws.slice(0, 1))).rejects.toThrow('stepsDrawnAfter() follows a run on the GPU');
      // A run from the host's tokens, then a member leaving: none follows either.
      const last = new Map(result[result.length - 1]);
      await ahead.stepsDrawn(new Map([...last].map(([i, t]) => [i, t.id])), draws.slice(0, 1));
      expect(ahead.continuesOnGpu).toBe(true);
      ahead.leave(2);
      expect(ahead.continuesOnGpu).toBe(false);
    } finally {
      single.dispose();
      ahead.dispose();
      other.dispose();
      lm.dispose();
    }
  }, 120_000);

  it("draws some rows on the GPU and reads back only the others' logits: each what a step of its own kind gives", async () => {
    await selectBackend('webgpu');
    const lm = await loadModel(makeTiny('decode-step-mixed'));
    const rows = 4;
    const V = lm.config.vocabSize;
    // Rows 0 and 2 drawn (one greedy, one sampled), rows 1 and 3 read back as logits.
    const draws = new Map([
      [0, { temperature: 0, u: 0 }],
      [2, { temperature: 1.5, u: 0.6 }],
    ]);
    const decode = async <T>(take: (batch: DecodeBatch<number>, next: Map<number, number>) => Promise<T>) => {
      const batch = new DecodeBatch<number>(lm.model);
      try {
        const next = new Map<number, number>();
        for (let i = 0; i < rows; i++) next.set(i, argmax(await batch.join(i, [1, 10 + i, 20 + 7 * i])));
        // A first step grows the merged cache (tfjs's work, a submit of its own) before the step compared.
        for (const [i, logits] of await batch.step(next)) next.set(i, argmax(logits));
        return await take(batch, next);
      } finally {
        batch.dispose();
      }
    };
    try {
      const logits = await decode((batch, next) => batch.step(next));
      const drawn = await decode((batch, next) => batch.stepDrawn(next, new Map([...next.keys()].map((i) => [i, draws.get(i) ?? { temperature: 0, u: 0 }]))));
      const mixed = await decode((batch, next) => countGpuWork(() => batch.stepMixed(next, draws)));
      for (let i = 0; i < rows; i++) {
        const value = mixed.result.get(i);
        if (draws.has(i)) expect(value).toEqual(drawn.get(i));
        else expect(value).toEqual(logits.get(i));
      }
      expect(mixed.counts).toMatchObject({ submits: 1, reads: 1, readBytes: 8 * rows + 2 * V * 4 });
    } finally {
      lm.dispose();
    }
  }, 120_000);

  it("draws a grammar's row on the GPU and samples it again from its logits, read back after the step, where the quick check refuses the token", async () => {
    await selectBackend('webgpu');
    const lm = await loadModel(makeTiny('decode-step-checked'));
    const prompts = [
      [1, 300, 301, 302],
      [1, 5, 6],
      [1, 400, 20, 21, 22],
    ];
    // The grammar's stand-in in the middle row, so that its logits read back are told from its neighbours'.
    const params: GenerationParams[] = [
      { temperature: 1, seed: 3, maxTokens: 10, ignoreEos: true },
      { temperature: 1.5, seed: 7, maxTokens: 10, ignoreEos: true, modelLogprobs: true, ...evenTokensOnly() },
      { temperature: 0.8, seed: 4, topK: 5, maxTokens: 10, ignoreEos: true },
    ];
    try {
      const sampled = await decodeTokens(lm, prompts, params, 'sampled');
      const mixed = await decodeTokens(lm, prompts, params, 'mixed');
      expect(mixed.map((row) => row.map((t) => t.id))).toEqual(sampled.map((row) => row.map((t) => t.id)));
      mixed.forEach((row, i) => row.forEach((t, j) => expect(Math.abs(t.logprob - sampled[i][j].logprob)).toBeLessThan(1e-5)));
      expect(mixed[1].every((t) => t.id % 2 === 0)).toBe(true);
      // The logits read back after a step are that step's, and only until another step runs.
      const batch = new DecodeBatch<number>(lm.model);
      try {
        const next = new Map([[0, argmax(await batch.join(0, prompts[0]))]]);
        const drawn = await batch.stepMixed(next, new Map([[0, { temperature: 0, u: 0 }]]));
        const [logits] = (await batch.lastLogits([0])).values();
        expect(argmax(logits)).toBe((drawn.get(0) as { id: number }).id);
        await batch.step(next);
        await expect(batch.lastLogits([0])).rejects.toThrow('lastLogits() follows a stepMixed()');
      } finally {
        batch.dispose();
      }
    } finally {
      lm.dispose();
    }
  }, 120_000);

  it("reads a grammar's logits with the step where its quick check would refuse any token, as near the end of its budget: no read after it", async () => {
    await selectBackend('webgpu');
    const lm = await loadModel(makeTiny('decode-step-checked'));
    const prompts = [
      [1, 300, 301, 302],
      [1, 5, 6],
    ];
    // The grammar's stand-in refuses every token from its 6th on: the steps that take its 7th to 10th.
    const params = (tells: boolean): GenerationParams[] => [
      { temperature: 1, seed: 3, maxTokens: 10, ignoreEos: true },
      { temperature: 1.5, seed: 7, maxTokens: 10, ignoreEos: true, modelLogprobs: true, ...evenTokensOnly(6, tells) },
    ];
    try {
      const sampled = await decodeTokens(lm, prompts, params(true), 'sampled');
      const told = await countGpuWork(() => decodeTokens(lm, prompts, params(true), 'mixed'));
      const untold = await countGpuWork(() => decodeTokens(lm, prompts, params(false), 'mixed'));
      // The same tokens and logprobs every way: the same draws from each random source.
      for (const { result } of [told, untold]) {
        expect(result.map((row) => row.map((t) => t.id))).toEqual(sampled.map((row) => row.map((t) => t.id)));
        result.forEach((row, i) => row.forEach((t, j) => expect(Math.abs(t.logprob - sampled[i][j].logprob)).toBeLessThan(1e-5)));
      }
      // Untold, each of those four steps draws a token the check refuses and reads the logits after it.
      expect(untold.counts.reads - told.counts.reads).toBe(4);
    } finally {
      lm.dispose();
    }
  }, 120_000);
});

describe('flatGrid', () => {
  it('keeps each dimension within 65535 workgroups and covers every element', () => {
    for (const count of [1, 64, 65, 65535 * 64, 65535 * 64 + 1, 71680 * 64, 3 * 65535 * 64 + 5]) {
      const [x, y] = flatGrid(count);
      expect(x).toBeLessThanOrEqual(65535);
      expect(y).toBeLessThanOrEqual(65535);
      expect(x * y * 64).toBeGreaterThanOrEqual(count);
      // No whole row of workgroups past the end.
      expect((y - 1) * x * 64).toBeLessThan(count);
    }
  });
});
