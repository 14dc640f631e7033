import * as tf from '@tensorflow/tfjs-core';
import { DecodeBatch } from '../../src/decode-batch';
import { LoadedModel, loadModel } from '../../src/loader';
import { LoraAttachment, applyAdapter } from '../../src/lora/lora-layer';
import { LoraRouter } from '../../src/lora/lora-router';
import { AdapterTensors, DEFAULT_LORA_SPEC, LoraSpec, initLoraWeights } from '../../src/lora/peft';
import { makeTiny, maxAbsDiff, rowsOf, useBackend } from '../helpers';

/** An adapter with non-zero B (a fresh one is the identity), different for each seed. */
function adapter(lm: LoadedModel, spec: LoraSpec, seed: number): LoraAttachment {
  const tensors: AdapterTensors = initLoraWeights(lm.config, spec, seed);
  for (const [name, t] of tensors) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.2 * Math.sin(seed * 7 + 3 * i)));
  const a = applyAdapter(lm, { spec, tensors });
  a.detach();
  return a;
}

describe('LoraRouter: several adapters of one base model in one batch (wasm)', () => {
  let lm: LoadedModel;
  let first: LoraAttachment;
  let second: LoraAttachment;
  let router: LoraRouter;

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('router'));
    first = adapter(lm, DEFAULT_LORA_SPEC, 1);
    // Another rank and fewer targets: the router must line up unequal adapters.
    second = adapter(lm, { r: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'down_proj'] }, 2);
    router = new LoraRouter(lm.model);
  });
  afterAll(() => {
    router.dispose();
    first.dispose();
    second.dispose();
    lm.dispose();
  });

  /** Logits of `tokens` alone under `a` (hooked on its own), or under the base model. */
  function alone(tokens: number[], a: LoraAttachment | null): Float32Array[] {
    a?.reattach();
    const t = lm.model.forward([tokens]);
    a?.detach();
    const rows = rowsOf(t);
    t.dispose();
    return rows;
  }

  const prompts = [
    [1, 300, 301, 302, 303],
    [1, 400, 20, 21, 22],
    [1, 5, 6, 7, 8],
    [1, 9, 10, 11, 12],
  ];

  /** Logits of `prompts` in one forward pass routed as `routing`, row by row, and of each prompt with its adapter alone. */
  function mixedAndAlone(routing: (LoraAttachment | null)[]): { mixed: Float32Array[]; want: Float32Array[] } {
    router.route(routing);
    const mixed = rowsOf(lm.model.forward(prompts));
    router.route([]);
    return { mixed, want: prompts.flatMap((tokens, r) => alone(tokens, routing[r])) };
  }

  it('gives every row of a mixed forward pass the logits of its own adapter, to the bit', () => {
    const routing = [first, second, null, first];
    const T = prompts[0].length;
    // Each adapter's delta goes to its own rows by the LoRA kernel, as it does alone.
    const { mixed, want } = mixedAndAlone(routing);
    mixed.forEach((row, i) => expect(maxAbsDiff(row, want[i])).toBe(0));
    // The adapters really change the model, so the comparison above can fail.
    expect(maxAbsDiff(alone(prompts[0], first)[T - 1], alone(prompts[0], null)[T - 1])).toBeGreaterThan(1e-2);
    expect(maxAbsDiff(alone(prompts[1], second)[T - 1], alone(prompts[1], first)[T - 1])).toBeGreaterThan(1e-2);
  });

  it('routes through masked products where an adapter does not fit the LoRA kernel (rank 2)', () => {
    const narrow = adapter(lm, { r: 2, alpha: 4, targetModules: ['q_proj', 'down_proj'] }, 3);
    try {
      const { mixed, want } = mixedAndAlone([narrow, first, null, narrow]);
      mixed.forEach((row, i) => expect(maxAbsDiff(row, want[i])).toBeLessThan(1e-4));
      const T = prompts[0].length;
      expect(maxAbsDiff(want[T - 1], alone(prompts[0], null)[T - 1])).toBeGreaterThan(1e-2);
    } finally {
      narrow.dispose();
    }
  });

  it('decodes a batch whose members join and leave with different adapters', async () => {
    const prompts: [string, number[], LoraAttachment | null][] = [
      ['a', [1, 300, 301], first],
      ['b', [1, 400, 20, 21], second],
      ['c', [1, 5, 6], null],
    ];
    const batch = new DecodeBatch<string>(lm.model);
    const adapterOf = new Map(prompts.map(([id, , a]) => [id, a]));
    const next = new Map<string, number>();
    const got = new Map<string, Float32Array[]>();
    for (const [id, prompt, a] of prompts) {
      router.route([a]);
      got.set(id, [await batch.join(id, prompt)]);
      next.set(id, 40 + id.charCodeAt(0));
    }
    for (let step = 0; step < 3; step++) {
      if (step === 2) {
        batch.leave('b');
        next.delete('b');
      }
      router.route(batch.ids.map((id) => adapterOf.get(id) ?? null));
      const out = await batch.step(next);
      for (const [id, logits] of out) got.get(id)?.push(logits);
    }
    router.route([]);
    batch.dispose();
    for (const [id, prompt, a] of prompts) {
      const fed = [...prompt, ...Array(id === 'b' ? 2 : 3).fill(40 + id.charCodeAt(0))];
      const want = alone(fed, a).slice(prompt.length - 1);
      const have = got.get(id) as Float32Array[];
      expect(have).toHaveLength(want.length);
      have.forEach((row, i) => expect(maxAbsDiff(row, want[i])).toBeLessThan(1e-4));
    }
  });

  it('decodes a routed batch with each block in one call, every row to the bit as with its adapter alone', async () => {
    // Rows 0 and 3 share an adapter, apart: its delta is added to two runs of rows.
    const prompts = [
      [1, 300, 301, 302],
      [1, 400, 20, 21],
      [1, 5, 6, 7],
      [1, 9, 10, 11],
    ];
    const routing = [first, second, null, first];
    /**
     * Logits of 3 decoding steps of `rows` (the batch's rows from `first` on) routed as
     * `adapters`, and the tfjs kernels of the last step.
     */
    const decode = async (rows: number[][], adapters: (LoraAttachment | null)[], first = 0) => {
      const cache = lm.model.newCache();
      rows.forEach(() => cache.addEmptyRow());
      router.route(adapters);
      lm.model.forward(rows, { cache, lastOnly: true }).dispose();
      const logits: Float32Array[][] = rows.map(() => []);
      let kernels: string[] = [];
      for (let step = 0; step < 3; step++) {
        const profile = await tf.profile(() => lm.model.forward(rows.map((_, b) => [30 + step + first + b]), { cache, lastOnly: true }));
        rowsOf(profile.result as tf.Tensor2D).forEach((row, b) => logits[b].push(row));
        (profile.result as tf.Tensor).dispose();
        kernels = profile.kernels.map((k) => k.name);
      }
      router.route([]);
      cache.dispose();
      return { logits, kernels };
    };
    const mixed = await decode(prompts, routing);
    // Only the final norm and the lm_head go through tfjs: every block ran in one call.
    expect(mixed.kernels).toHaveLength(2);
    for (let b = 0; b < prompts.length; b++) {
      // Alone, each row's adapter is hooked in as it is (or none is): the same bits.
      const alone = await decode([prompts[b]], [routing[b]], b);
      mixed.logits[b].forEach((row, step) => expect(maxAbsDiff(row, alone.logits[0][step])).toBe(0));
    }
    // The adapters really change the rows, so the comparison above can fail.
    const base = await decode([prompts[0], prompts[1]], [null, null]);
    expect(maxAbsDiff(mixed.logits[0][2], base.logits[0][2])).toBeGreaterThan(1e-2);
    expect(maxAbsDiff(mixed.logits[1][2], base.logits[1][2])).toBeGreaterThan(1e-2);
  });

  it('leaves the base model untouched once routed back to no adapter', () => {
    const tokens = [1, 17, 300, 42];
    const before = alone(tokens, null);
    router.route([first, second]);
    tf.tidy(() => lm.model.forward([tokens, tokens]));
    router.route([null]);
    const after = rowsOf(lm.model.forward([tokens]));
    router.route([]);
    after.forEach((row, t) => expect(maxAbsDiff(row, before[t])).toBeLessThan(1e-6));
  });
});
