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

  it('gives every row of a mixed forward pass the logits of its own adapter', () => {
    const prompts = [
      [1, 300, 301, 302, 303],
      [1, 400, 20, 21, 22],
      [1, 5, 6, 7, 8],
      [1, 9, 10, 11, 12],
    ];
    const routing = [first, second, null, first];
    router.route(routing);
    const mixed = rowsOf(lm.model.forward(prompts));
    router.route([]);
    const T = prompts[0].length;
    prompts.forEach((tokens, r) => {
      const want = alone(tokens, routing[r]);
      for (let t = 0; t < T; t++) expect(maxAbsDiff(mixed[r * T + t], want[t])).toBeLessThan(1e-4);
    });
    // The adapters really change the model, so the comparison above can fail.
    expect(maxAbsDiff(alone(prompts[0], first)[T - 1], alone(prompts[0], null)[T - 1])).toBeGreaterThan(1e-2);
    expect(maxAbsDiff(alone(prompts[1], second)[T - 1], alone(prompts[1], first)[T - 1])).toBeGreaterThan(1e-2);
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
