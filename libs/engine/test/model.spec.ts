import * as tf from '@tensorflow/tfjs-core';
import { DecodeBatch } from '../src/decode-batch';
import { LoadedModel, loadModel } from '../src/loader';
import { KVCache, SPARE_COLUMNS } from '../src/model/kv-cache';
import { LoraLayer } from '../src/lora/lora-layer';
import { LinearAdapter } from '../src/model/linear';
import { PRESETS } from '../src/maker/make-model';
import { makeTiny, maxAbsDiff, rowsOf, useBackend } from './helpers';
import { referenceForward } from './reference';

const PROMPTS = [
  [1, 300, 301, 302, 303, 304, 305, 2],
  [1, 400, 20, 21],
  [1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
  [1, 77, 78],
];

describe('Llama forward pass (wasm)', () => {
  let lm: LoadedModel;

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('model'));
  });
  afterAll(() => lm.dispose());

  function fullLogits(tokens: number[]): Float32Array[] {
    const t = lm.model.forward([tokens]);
    const rows = rowsOf(t);
    t.dispose();
    return rows;
  }

  it.each([
    ['llama, untied, llama3 rope scaling', { modelType: 'llama' as const, ropeScaling: { type: 'llama3' as const, factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 16 } }],
    ['qwen2 (q/k/v biases), tied', { modelType: 'qwen2' as const, tieWordEmbeddings: true }],
    ["llama 3.2 (the tiny-llama3.2 preset: Llama 3.2's RoPE base and llama3 rescaling, tied)", PRESETS['tiny-llama3.2']],
    ['llama with attention_bias, 3 kv groups', { modelType: 'llama' as const, oBias: true, qkvBias: true, numHeads: 6, numKvHeads: 2, headDim: 8 }],
  ])('matches a plain-JS reference on a one-layer %s model', async (_, overrides) => {
    const dir = makeTiny('ref', { overrides: { numLayers: 1, ...overrides }, initStd: 0.2 });
    const one = await loadModel(dir);
    const tokens = [1, 17, 300, 42, 99, 2, 7, 401, 5, 260];
    const logits = one.model.forward([tokens]);
    const ours = rowsOf(logits);
    logits.dispose();
    // Decoding the same tokens one at a time after a 4-token prompt (each block in one call
    // on wasm, kernels/decode-block.ts, the biases included) gives the same logits.
    const cache = one.model.newCache();
    cache.addEmptyRow();
    const decoded = [tokens.slice(0, 4), ...tokens.slice(4).map((t) => [t])].flatMap((step) => {
      const stepLogits = one.model.forward([step], { cache });
      const rows = rowsOf(stepLogits);
      stepLogits.dispose();
      return rows;
    });
    cache.dispose();
    one.dispose();
    const ref = referenceForward(dir, tokens);
    ours.forEach((row, t) => expect(maxAbsDiff(row, ref[t])).toBeLessThan(2e-4));
    decoded.forEach((row, t) => expect(maxAbsDiff(row, ref[t])).toBeLessThan(2e-4));
    // And the logits are not trivially equal across positions.
    expect(maxAbsDiff(ref[0], ref[5])).toBeGreaterThan(1e-2);
  });

  it('attends in tiles on long sequences and still matches the plain-JS reference', async () => {
    // 2 query heads per KV head x 1500 x 1500 scores exceed one attention tile (4M floats).
    const dir = makeTiny('long', { overrides: { numLayers: 1 }, initStd: 0.2 });
    const one = await loadModel(dir);
    const tokens = Array.from({ length: 1500 }, (_, i) => 3 + ((i * 37) % 500));
    const logits = one.model.forward([tokens]);
    const ours = rowsOf(logits);
    logits.dispose();
    one.dispose();
    const ref = referenceForward(dir, tokens);
    for (const t of [0, 700, 1499]) expect(maxAbsDiff(ours[t], ref[t])).toBeLessThan(2e-4);
  });

  it('decoding with the KV cache equals the full forward pass', () => {
    const tokens = PROMPTS[2];
    const full = fullLogits(tokens);
    const cache = lm.model.newCache();
    cache.addEmptyRow();
    const prefill = lm.model.forward([tokens.slice(0, 5)], { cache });
    const got = rowsOf(prefill);
    prefill.dispose();
    for (let t = 5; t < tokens.length; t++) {
      const step = lm.model.forward([[tokens[t]]], { cache });
      got.push(...rowsOf(step));
      step.dispose();
    }
    cache.dispose();
    got.forEach((row, t) => expect(maxAbsDiff(row, full[t])).toBeLessThan(1e-4));
  });

  /** Logits of each step: `prompt` prefilled into `cache`, then `continuation` one token at a time. */
  function decodeInto(cache: KVCache, prompt: number[], continuation: number[]): Float32Array[] {
    if (cache.rows === 0) cache.addEmptyRow();
    const rows: Float32Array[] = [];
    for (const tokens of [prompt, ...continuation.map((t) => [t])].filter((t) => t.length > 0)) {
      const logits = lm.model.forward([tokens], { cache });
      rows.push(...rowsOf(logits));
      logits.dispose();
    }
    return rows;
  }

  it('appends to spare KV-cache columns in place, with the same bits as concatenating, across growths', () => {
    const continuation = Array.from({ length: SPARE_COLUMNS + 20 }, (_, i) => 3 + ((i * 29) % 500));
    const inPlace = lm.model.newCache();
    const concatenated = new KVCache(lm.config.numLayers, { inPlace: false });
    expect(inPlace.inPlace).toBe(true);
    const ours = decodeInto(inPlace, PROMPTS[2].slice(0, 5), continuation.slice(0, 10));
    const theirs = decodeInto(concatenated, PROMPTS[2].slice(0, 5), continuation.slice(0, 10));
    // The first decoding step grew every layer to its 6 columns and SPARE_COLUMNS spare ones;
    // the next nine wrote into those.
    expect(inPlace.bytes).toBe((concatenated.bytes * (6 + SPARE_COLUMNS)) / 15);
    // Three tokens at once go into the spare columns too (the prompt kernel reads them).
    ours.push(...decodeInto(inPlace, [7, 8, 9], continuation.slice(10)));
    theirs.push(...decodeInto(concatenated, [7, 8, 9], continuation.slice(10)));
    expect(ours).toHaveLength(5 + 3 + continuation.length);
    ours.forEach((row, i) => expect(maxAbsDiff(row, theirs[i])).toBe(0));
    inPlace.dispose();
    concatenated.dispose();
  });

  it('merges caches into tensors with spare columns, so that the next step writes in place, with the bits of concatenating', () => {
    const merged = lm.model.newCache();
    const concatenated = new KVCache(lm.config.numLayers, { inPlace: false });
    for (const cache of [merged, concatenated]) {
      decodeInto(cache, PROMPTS[0], []);
      const joining = new KVCache(lm.config.numLayers, { inPlace: cache.inPlace });
      decodeInto(joining, PROMPTS[1], []);
      cache.merge(joining);
    }
    // Both rows, 8 columns wide (the longer prompt), and SPARE_COLUMNS spare ones after them.
    const { numLayers, numKvHeads, headDim } = lm.config;
    expect(merged.width).toBe(8);
    expect(merged.appendTarget(0, 1)).not.toBeNull();
    expect(merged.bytes).toBe(2 * numLayers * 2 * numKvHeads * (8 + SPARE_COLUMNS) * headDim * 4);
    const step = (cache: KVCache) => {
      const logits = lm.model.forward([[40], [41]], { cache });
      const rows = rowsOf(logits);
      logits.dispose();
      return rows;
    };
    const bytes = merged.bytes;
    const ours = step(merged);
    // Written into the spare columns: no layer was copied into a larger tensor.
    expect(merged.bytes).toBe(bytes);
    step(concatenated).forEach((row, i) => expect(maxAbsDiff(row, ours[i])).toBe(0));
    merged.dispose();
    concatenated.dispose();
  });

  it.each([
    ['f32', {}, 'checkpoint' as const],
    ['bf16', { dtype: 'BF16' as const }, 'checkpoint' as const],
    ['q8', {}, 'q8' as const],
  ])('decodes each block in one call over %s panels, to the bit as the tfjs path, in a batch, with LoRA and beside another adapter', async (_, make, weights) => {
    const served = await loadModel(makeTiny('block', make), { inferenceOnly: true, weights });
    const { model } = served;
    const rows = [PROMPTS[0], PROMPTS[0].map((t) => t + 50)];
    /** Logits of 4 decoding steps of both rows, and the tfjs kernels the last step dispatched. */
    const decode = async (cache: KVCache) => {
      rows.forEach(() => cache.addEmptyRow());
      model.forward(rows, { cache, lastOnly: true }).dispose();
      const logits: Float32Array[] = [];
      let kernels: string[] = [];
      for (let step = 0; step < 4; step++) {
        const tokens = rows.map((_, b) => [20 + 3 * step + b]);
        const profile = await tf.profile(() => model.forward(tokens, { cache, lastOnly: true }));
        const result = profile.result as tf.Tensor2D;
        logits.push(...rowsOf(result));
        result.dispose();
        kernels = profile.kernels.map((k) => k.name);
      }
      cache.dispose();
      return { logits, kernels };
    };
    const concatenated = () => new KVCache(model.config.numLayers, { inPlace: false });

    const oneCall = await decode(model.newCache());
    const byOps = await decode(concatenated());
    // After the first step made spare columns, a step dispatches only the final norm and
    // lm_head; the tfjs path dispatches every block's kernels.
    expect(oneCall.kernels).toHaveLength(2);
    expect(byOps.kernels.length).toBeGreaterThan(10 * model.config.numLayers);
    oneCall.logits.forEach((row, i) => expect(maxAbsDiff(row, byOps.logits[i])).toBe(0));

    const qkv = model.blocks[0].attention.qkv;
    const down = model.blocks[1].mlp.down;
    const out = model.config.numHeads * model.config.headDim;
    const a = tf.randomNormal([model.config.hiddenSize, 4], 0, 0.5, 'float32', 1) as tf.Tensor2D;
    const b = tf.randomNormal([4, out], 0, 0.5, 'float32', 2) as tf.Tensor2D;
    const aDown = tf.randomNormal([model.config.intermediateSize, 4], 0, 0.5, 'float32', 3) as tf.Tensor2D;
    const bDown = tf.randomNormal([4, model.config.hiddenSize], 0, 0.5, 'float32', 4) as tf.Tensor2D;
    try {
      // LoRA on q of one block and on the other's down projection (a served checkpoint's
      // adapters): both blocks still run in one call, to the bit as the tfjs path.
      qkv.setAdapter('q_proj', new LoraLayer('q_proj', 0, a, b, null));
      down.setAdapter('down_proj', new LoraLayer('down_proj', 1, aDown, bDown, null));
      const withLora = await decode(model.newCache());
      const loraByOps = await decode(concatenated());
      expect(withLora.kernels).toHaveLength(2);
      withLora.logits.forEach((row, i) => expect(maxAbsDiff(row, loraByOps.logits[i])).toBe(0));
      expect(maxAbsDiff(withLora.logits[0], oneCall.logits[0])).toBeGreaterThan(1e-4);
      down.setAdapter('down_proj', null);

      // An adapter that is not low-rank sends its block down the tfjs path; the other still
      // runs in one call, and the logits are still those of the tfjs path.
      qkv.setAdapter('q_proj', { forward: (x) => tf.matMul(tf.matMul(x, a), b) });
      const mixed = await decode(model.newCache());
      const adapted = await decode(concatenated());
      expect(mixed.kernels.length).toBeGreaterThan(2);
      expect(mixed.kernels.length).toBeLessThan(adapted.kernels.length);
      mixed.logits.forEach((row, i) => expect(maxAbsDiff(row, adapted.logits[i])).toBe(0));
      expect(maxAbsDiff(mixed.logits[0], oneCall.logits[0])).toBeGreaterThan(1e-4);
    } finally {
      qkv.setAdapter('q_proj', null);
      down.setAdapter('down_proj', null);
      tf.dispose([a, b, aDown, bDown]);
      served.dispose();
    }
  });

  it("puts a joining row in place of one that left: in its tensors where the cache owns them, else in new ones, decoding as each row alone", () => {
    const { numLayers } = lm.config;
    for (const inPlace of [true, false]) {
      const cache = new KVCache(numLayers, { inPlace });
      decodeInto(cache, PROMPTS[0], []);
      const second = new KVCache(numLayers, { inPlace });
      decodeInto(second, PROMPTS[1], []);
      cache.merge(second);
      const step = (tokens: number[]) => {
        const logits = lm.model.forward(tokens.map((t) => [t]), { cache });
        const rows = rowsOf(logits);
        logits.dispose();
        return rows;
      };
      step([40, 41]);
      // Row 0 leaves; a 5-token prompt takes its row (the cache is 9 columns wide).
      const joining = new KVCache(numLayers, { inPlace });
      const joined = PROMPTS[2].slice(0, 5);
      decodeInto(joining, joined, []);
      const before = cache.appendTarget(0, 1);
      const wider = new KVCache(numLayers, { inPlace });
      decodeInto(wider, PROMPTS[2], []);
      // A prompt wider than the cache does not fit: nothing changes.
      expect(cache.replaceRow(0, wider)).toBe(false);
      expect(wider.rows).toBe(1);
      expect(cache.replaceRow(0, joining)).toBe(true);
      expect(joining.rows).toBe(0);
      expect(cache.lengths()).toEqual([5, PROMPTS[1].length + 1]);
      // Written where the cache's tensors are (in-place mode), or into new ones.
      const after = cache.appendTarget(0, 1);
      if (inPlace) expect(after?.k).toBe(before?.k);
      else expect(after).toBeNull();
      const [first, other] = step([50, 42]);
      expect(maxAbsDiff(first, fullLogits([...joined, 50]).at(-1) as Float32Array)).toBeLessThan(1e-4);
      expect(maxAbsDiff(other, fullLogits([...PROMPTS[1], 41, 42]).at(-1) as Float32Array)).toBeLessThan(1e-4);
      wider.dispose();
      cache.dispose();
    }
  });

  it('gives a prefix of a cache with spare columns keys of its own: each goes on without touching the other', () => {
    const prompt = PROMPTS[0];
    const source = lm.model.newCache();
    decodeInto(source, prompt.slice(0, 5), prompt.slice(5));
    const taken = source.prefix(prompt.length);
    // Both append at the same column: had they shared the tensor, the second write would
    // overwrite the first's key and value.
    const [fromTaken] = decodeInto(taken, [], [50]);
    const [fromSource, next] = decodeInto(source, [], [60, 61]);
    expect(maxAbsDiff(fromTaken, fullLogits([...prompt, 50]).at(-1) as Float32Array)).toBeLessThan(1e-4);
    expect(maxAbsDiff(fromSource, fullLogits([...prompt, 60]).at(-1) as Float32Array)).toBeLessThan(1e-4);
    expect(maxAbsDiff(next, fullLogits([...prompt, 60, 61]).at(-1) as Float32Array)).toBeLessThan(1e-4);
    decodeInto(taken, [], [51]);
    const [after] = decodeInto(source, [], [62]);
    expect(maxAbsDiff(after, fullLogits([...prompt, 60, 61, 62]).at(-1) as Float32Array)).toBeLessThan(1e-4);
    source.dispose();
    taken.dispose();
  });

  it('batched decoding equals one sequence at a time, with sequences joining and leaving', async () => {
    const continuation = [40, 41, 42, 43, 44, 45, 46, 47];
    const expected = PROMPTS.map((p) => fullLogits([...p, ...continuation]));
    const batch = new DecodeBatch<number>(lm.model);
    const progress = PROMPTS.map(() => 0);
    const check = (i: number, logits: Float32Array) => {
      const position = PROMPTS[i].length - 1 + progress[i];
      expect(maxAbsDiff(logits, expected[i][position])).toBeLessThan(1e-4);
      progress[i]++;
    };
    // 0 joins alone, 1 joins after two steps, 2 after three; 0 leaves after five tokens and 3
    // takes its row; 1 leaves after six, and the next step drops its row.
    check(0, await batch.join(0, PROMPTS[0]));
    for (let step = 0; step < 7; step++) {
      if (step === 2) check(1, await batch.join(1, PROMPTS[1]));
      if (step === 3) check(2, await batch.join(2, PROMPTS[2]));
      if (step === 5) {
        batch.leave(0);
        expect(batch.ids).toEqual([1, 2]);
        check(3, await batch.join(3, PROMPTS[3]));
        expect(batch.ids).toEqual([3, 1, 2]);
      }
      if (step === 6) batch.leave(1);
      const next = new Map(batch.ids.map((i) => [i, continuation[progress[i] - 1]]));
      const out = await batch.step(next);
      for (const [i, logits] of out) check(i, logits);
    }
    expect(progress).toEqual([6, 5, 5, 3]);
    expect(batch.size).toBe(2);
    batch.dispose();
  });

  it('keeps the number of tensors flat across decode steps', async () => {
    const batch = new DecodeBatch<string>(lm.model);
    await batch.join('a', PROMPTS[0]);
    await batch.join('b', PROMPTS[1]);
    const next = new Map([
      ['a', 5],
      ['b', 6],
    ]);
    await batch.step(next);
    const before = tf.memory().numTensors;
    // Past the cache's spare columns: one step copies it into new ones.
    for (let i = 0; i < SPARE_COLUMNS + 5; i++) await batch.step(next);
    expect(tf.memory().numTensors).toBe(before);
    batch.leave('a');
    batch.leave('b');
    batch.dispose();
  });

  it('lets an adapter change one part of a fused projection, and removing it restores the model', () => {
    const tokens = PROMPTS[1];
    const before = fullLogits(tokens);
    const qkv = lm.model.blocks[0].attention.qkv;
    const out = lm.config.numHeads * lm.config.headDim;
    const a = tf.randomNormal([lm.config.hiddenSize, 4], 0, 0.5, 'float32', 1);
    const b = tf.randomNormal([4, out], 0, 0.5, 'float32', 2) as tf.Tensor2D;
    const lora: LinearAdapter = { forward: (x) => tf.matMul(tf.matMul(x, a), b) };
    qkv.setAdapter('q_proj', lora);
    try {
      const after = fullLogits(tokens);
      // Position 0 attends only to itself: a change of q alone cannot move it.
      expect(maxAbsDiff(before[0], after[0])).toBeLessThan(1e-5);
      expect(maxAbsDiff(before[3], after[3])).toBeGreaterThan(1e-3);
    } finally {
      qkv.setAdapter('q_proj', null);
      tf.dispose([a, b]);
    }
    expect(maxAbsDiff(fullLogits(tokens)[3], before[3])).toBe(0);
  });

  it('gives frozen linears a backward pass through the stored [out, in] weight', () => {
    const linear = lm.model.blocks[0].mlp.down;
    const x = tf.randomNormal([3, linear.inFeatures], 0, 1, 'float32', 3);
    const dy = tf.randomNormal([3, linear.outFeatures], 0, 1, 'float32', 4);
    linear.enableBackward();
    try {
      const dx = tf.grad((input: tf.Tensor) => linear.forward(input as tf.Tensor2D))(x, dy);
      const expected = tf.matMul(dy, linear.weightT, false, true);
      expect(maxAbsDiff(dx.dataSync(), expected.dataSync())).toBeLessThan(1e-4);
      tf.dispose([dx, expected]);
    } finally {
      linear.disableBackward();
      tf.dispose([x, dy]);
    }
  });
});
