import * as tf from '@tensorflow/tfjs-core';
import { ChatMessage } from '../../src/chat-template';
import { LoadedModel, loadModel } from '../../src/loader';
import { applyAdapter } from '../../src/lora/lora-layer';
import { DEFAULT_LORA_SPEC, LoraSpec, initLoraWeights, readPeftAdapter, writePeftAdapter } from '../../src/lora/peft';
import { generate } from '../../src/generate';
import { AdamW } from '../../src/training/adamw';
import { NextTokenLoss, NextTokenValues, checkpointedGradients, nextTokenRows } from '../../src/training/checkpointing';
import { KeptProducts } from '../../src/training/checkpointing';
import { buildSftSequence } from '../../src/training/sequences';
import { LoraTrainer, StepMetrics } from '../../src/training/trainer';
import { largestGradientAgainstDifference, makeTiny, maxAbsDiff, rowsOf, tempDir, useBackend } from '../helpers';

const CONVERSATIONS = [
  { messages: [{ role: 'user', content: 'capital of France?' }, { role: 'assistant', content: 'Paris' }] },
  { messages: [{ role: 'user', content: 'two plus two' }, { role: 'assistant', content: 'four' }] },
  { messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'colour of the sky' }, { role: 'assistant', content: 'blue' }] },
  {
    messages: [
      { role: 'user', content: 'weather in Oslo' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'rain' },
      { role: 'assistant', content: 'rain' },
    ] as ChatMessage[],
    tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
  },
];

/** The checkpointed loss and gradients are the taped pass's (each gradient nonzero, within 1e-3 of its largest element); disposes both. */
function expectTapedGradients(checkpointed: { value: number; grads: Map<string, tf.Tensor> }, taped: { value: tf.Scalar; grads: tf.NamedTensorMap }, vars: tf.Variable[]): void {
  expect(Math.abs(checkpointed.value - taped.value.dataSync()[0])).toBeLessThan(1e-4 * Math.abs(checkpointed.value));
  for (const v of vars) {
    const want = taped.grads[v.name].dataSync();
    const scale = Math.max(...Array.from(want, Math.abs));
    expect(scale).toBeGreaterThan(0);
    expect(maxAbsDiff((checkpointed.grads.get(v.name) as tf.Tensor).dataSync(), want)).toBeLessThan(1e-3 * scale + 1e-6);
  }
  taped.value.dispose();
  Object.values(taped.grads).forEach((t) => t.dispose());
  checkpointed.grads.forEach((t) => t.dispose());
}

describe('LoRA training (wasm, tiny model)', () => {
  let lm: LoadedModel;

  /** A trainer of rank-2 adapters on every target, initialised from `seed`, with B nonzero (`b` of each element and factor), so that A's gradients are not trivially zero. */
  const rankTwoTrainer = (seed: number, b: (i: number, name: string) => number) => {
    const spec: LoraSpec = { r: 2, alpha: 4, targetModules: DEFAULT_LORA_SPEC.targetModules };
    const init = initLoraWeights(lm.config, spec, seed);
    for (const [name, t] of init) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = b(i, name)));
    return new LoraTrainer(lm, spec, init);
  };

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('train'));
  });
  afterAll(() => lm.dispose());

  function logits(tokens: number[]): Float32Array[] {
    const t = lm.model.forward([tokens]);
    const rows = rowsOf(t);
    t.dispose();
    return rows;
  }

  it('masks exactly the assistant turns, tool calls included', () => {
    const seq = buildSftSequence(lm, CONVERSATIONS[3]);
    const trained = lm.tokenizer.decode(seq.tokens.filter((_, i) => seq.mask[i] === 1), { skipSpecialTokens: false });
    expect(trained).toContain('<tool_call>');
    expect(trained).toContain('"Oslo"');
    expect(trained).toContain('rain<|im_end|>');
    expect(trained).not.toContain('weather in Oslo');
    expect(trained).not.toContain('<|im_start|>tool');
    const untrained = lm.tokenizer.decode(seq.tokens.filter((_, i) => seq.mask[i] === 0), { skipSpecialTokens: false });
    expect(untrained).toContain('<|im_start|>assistant\n');
  });

  it('with assistant_turns "last", trains only the last assistant turn and keeps the earlier ones as context', () => {
    const all = buildSftSequence(lm, CONVERSATIONS[3], 'all');
    const last = buildSftSequence(lm, CONVERSATIONS[3], 'last');
    expect(last.tokens).toEqual(all.tokens);
    const trained = lm.tokenizer.decode(last.tokens.filter((_, i) => last.mask[i] === 1), { skipSpecialTokens: false });
    expect(trained).toBe('rain<|im_end|>\n');
    const context = lm.tokenizer.decode(last.tokens.filter((_, i) => last.mask[i] === 0), { skipSpecialTokens: false });
    expect(context).toContain('<tool_call>');
    expect(last.mask.filter((m) => m === 1).length).toBeLessThan(all.mask.filter((m) => m === 1).length);
    // One assistant turn: both settings train the same tokens.
    expect(buildSftSequence(lm, CONVERSATIONS[0], 'last')).toEqual(buildSftSequence(lm, CONVERSATIONS[0], 'all'));
  });

  it('keeps an assistant message of weight 0 as context, without loss, under either setting', () => {
    const [user, call, tool, answer] = CONVERSATIONS[3].messages;
    const weighted = { ...CONVERSATIONS[3], messages: [user, { ...call, weight: 0 as const }, tool, answer] };
    const all = buildSftSequence(lm, CONVERSATIONS[3], 'all');
    const seq = buildSftSequence(lm, weighted, 'all');
    expect(seq.tokens).toEqual(all.tokens);
    expect(lm.tokenizer.decode(seq.tokens.filter((_, i) => seq.mask[i] === 1), { skipSpecialTokens: false })).toBe('rain<|im_end|>\n');
    // Weight 1 is the default; a last turn of weight 0 under "last" leaves nothing to train.
    expect(buildSftSequence(lm, { ...CONVERSATIONS[3], messages: [user, { ...call, weight: 1 as const }, tool, answer] })).toEqual(all);
    expect(() => buildSftSequence(lm, { ...CONVERSATIONS[3], messages: [user, call, tool, { ...answer, weight: 0 as const }] }, 'last')).toThrow(/no assistant message to train on/);
  });

  // Rank 2 runs the adapters' products as tfjs ops, rank 4 on the LoRA kernels (kernels/lora.ts).
  it.each([2, 4])('LoRA parameter gradients match central finite differences (r %i)', (r) => {
    const spec: LoraSpec = { r, alpha: 2 * r, targetModules: DEFAULT_LORA_SPEC.targetModules };
    const init = initLoraWeights(lm.config, spec, 11);
    // Non-zero B so that A's gradients are not trivially zero.
    for (const [name, t] of init) if (name.endsWith('lora_B.weight')) t.data.forEach((_, i) => (t.data[i] = 0.05 * Math.sin(3 * i + name.length)));
    const trainer = new LoraTrainer(lm, spec, init);
    try {
      const tokens = buildSftSequence(lm, CONVERSATIONS[0]).tokens;
      const loss = () => tf.tidy(() => tf.neg(tf.mean(trainer.forward([tokens], 64, false).logprobs)) as tf.Scalar);
      const vars = trainer.attachment.variables();
      const { value, grads } = tf.variableGrads(loss, vars);
      value.dispose();
      // q_proj A of layer 0, k_proj B of layer 1, down_proj A and B of the last layer...
      const picks = [0, 3, 5, 9, vars.length - 2, vars.length - 1];
      let checked = 0;
      for (const vi of picks) {
        const v = vars[vi];
        const g = grads[v.name].dataSync();
        const data = v.dataSync().slice();
        // The element with the largest gradient, and one other.
        let best = 0;
        g.forEach((x, i) => (Math.abs(x) > Math.abs(g[best]) ? (best = i) : 0));
        for (const i of [best, Math.floor(data.length / 3)]) {
          const eps = 1e-2;
          const at = (delta: number) => {
            const d = data.slice();
            d[i] += delta;
            v.assign(tf.tensor(d, v.shape));
            const l = loss();
            const out = l.dataSync()[0];
            l.dispose();
            return out;
          };
          const numeric = (at(eps) - at(-eps)) / (2 * eps);
          v.assign(tf.tensor(data, v.shape));
          expect(Math.abs(numeric - g[i])).toBeLessThan(2e-3 + 0.05 * Math.abs(g[i]));
          if (Math.abs(g[i]) > 1e-3) checked++;
        }
      }
      expect(checked).toBeGreaterThanOrEqual(4);
      Object.values(grads).forEach((t) => t.dispose());
    } finally {
      trainer.dispose();
    }
  });

  it('activation checkpointing gives the gradients of the plain taped pass, over tiled attention too', async () => {
    const trainer = rankTwoTrainer(5, (i, name) => 0.05 * Math.cos(5 * i + name.length));
    try {
      const short = buildSftSequence(lm, CONVERSATIONS[0]).tokens;
      // 1500 tokens: 2 heads x 1500 x 1500 scores, more than one attention tile.
      const long = Array.from({ length: 1500 }, (_, i) => 3 + ((i * 53) % 400));
      const rows = [short, long];
      const T = long.length - 1;
      // Weights on the short row and on the long row's last positions: a loss small enough for
      // finite differences in float32, whose gradient still flows through every key of the long row.
      const w = new Float32Array(2 * T);
      for (let t = 0; t < short.length - 1; t++) w[t] = 0.5 + 0.5 * Math.sin(t);
      for (let t = T - 8; t < T; t++) w[T + t] = 1;
      const weights = tf.tensor2d(w, [2, T]);
      const lossOf = (lp: tf.Tensor2D) => tf.neg(tf.sum(tf.mul(lp, weights))) as tf.Scalar;
      const vars = trainer.attachment.variables();
      const taped = tf.variableGrads(() => tf.tidy(() => lossOf(trainer.forward(rows, 256, false).logprobs)), vars);
      const checkpointed = await checkpointedGradients(lm.model, nextTokenRows(rows), trainer.attachment.variablesByLayer(), lossOf, { chunk: 256, withEntropy: false });
      expect(Math.abs(checkpointed.value - taped.value.dataSync()[0])).toBeLessThan(1e-3 * Math.abs(checkpointed.value));
      expect(checkpointed.grads.size).toBe(vars.length);
      let largest = 0;
      for (const v of vars) {
        const want = taped.grads[v.name].dataSync();
        const got = (checkpointed.grads.get(v.name) as tf.Tensor).dataSync();
        const scale = Math.max(...Array.from(want, Math.abs));
        largest = Math.max(largest, scale);
        expect(maxAbsDiff(got, want)).toBeLessThan(1e-3 * scale + 1e-6);
      }
      expect(largest).toBeGreaterThan(1e-3);
      // Both passes share the tiled attention's hand-written gradient: check it against central
      // finite differences too, on the largest gradient element of the q, k and v adapters.
      for (const target of ['q_proj', 'k_proj', 'v_proj']) {
        const loss = () => tf.tidy(() => lossOf(trainer.forward(rows, 256, false).logprobs).dataSync()[0]);
        const { analytic, numeric } = largestGradientAgainstDifference(trainer.attachment.layers, target, (name) => checkpointed.grads.get(name) as tf.Tensor, loss);
        expect(Math.abs(analytic)).toBeGreaterThan(1e-2);
        expect(Math.abs(numeric - analytic)).toBeLessThan(0.05 * Math.abs(analytic));
      }
      taped.value.dispose();
      Object.values(taped.grads).forEach((t) => t.dispose());
      checkpointed.grads.forEach((t) => t.dispose());
      weights.dispose();
    } finally {
      trainer.dispose();
    }
  });

  it('a loss linear in the log-probs (WeightedLogprobs) gives the value and gradients of the same loss as a function of them', async () => {
    const trainer = rankTwoTrainer(7, (i, name) => 0.05 * Math.cos(2 * i + name.length));
    try {
      const rows = [buildSftSequence(lm, CONVERSATIONS[0]).tokens, buildSftSequence(lm, CONVERSATIONS[2]).tokens];
      const T = Math.max(...rows.map((r) => r.length)) - 1;
      // Weights on some positions only (the scored ones), in two lm_head chunks of 8.
      const w = Float32Array.from({ length: 2 * T }, (_, i) => (i % 3 === 0 ? 0 : -(0.5 + 0.5 * Math.sin(i))));
      const options = { chunk: 8, withEntropy: false, scored: w };
      const asFunction = (lp: tf.Tensor2D) => tf.sum(tf.mul(lp, tf.tensor2d(w, lp.shape))) as tf.Scalar;
      const layers = trainer.attachment.variablesByLayer();
      const want = await checkpointedGradients(lm.model, nextTokenRows(rows), layers, asFunction, options);
      const before = tf.memory().numTensors;
      const got = await checkpointedGradients(lm.model, nextTokenRows(rows), layers, { weights: w }, options);
      // Nothing kept but the gradients.
      expect(tf.memory().numTensors - before).toBe(got.grads.size);
      expect(Math.abs(got.value - want.value)).toBeLessThan(1e-5 * Math.abs(want.value));
      expect(Math.abs(want.value)).toBeGreaterThan(1);
      expect([...got.grads.keys()]).toEqual([...want.grads.keys()]);
      for (const [name, g] of want.grads) {
        const expected = g.dataSync();
        const scale = Math.max(...Array.from(expected, Math.abs));
        expect(maxAbsDiff((got.grads.get(name) as tf.Tensor).dataSync(), expected)).toBeLessThanOrEqual(1e-5 * scale);
      }
      [...want.grads.values(), ...got.grads.values()].forEach((t) => t.dispose());
    } finally {
      trainer.dispose();
    }
  });

  it('activation checkpointing through the kept head probabilities (a step within one lm_head chunk) gives the taped pass\'s gradients', async () => {
    const trainer = rankTwoTrainer(6, (i, name) => 0.05 * Math.sin(3 * i + name.length));
    try {
      const rows = [buildSftSequence(lm, CONVERSATIONS[0]).tokens, buildSftSequence(lm, CONVERSATIONS[1]).tokens];
      const T = Math.max(...rows.map((r) => r.length)) - 1;
      const weights = tf.tensor2d(Float32Array.from({ length: 2 * T }, (_, i) => 0.5 + 0.5 * Math.cos(i)), [2, T]);
      const lossOf = (lp: tf.Tensor2D) => tf.neg(tf.sum(tf.mul(lp, weights))) as tf.Scalar;
      const vars = trainer.attachment.variables();
      const taped = tf.variableGrads(() => tf.tidy(() => lossOf(trainer.forward(rows, 256, false).logprobs)), vars);
      // 2 x T positions fit one chunk of 256: step 3 runs from the probabilities step 2 kept.
      expect(2 * T).toBeLessThanOrEqual(256);
      const before = tf.memory().numTensors;
      const seen: NextTokenValues[] = [];
      // A loss with a metric: the entropies' sum, read back with the loss's value.
      const lossSeeing: NextTokenLoss = (lp, constants) => {
        seen.push({ logprobs: constants.logprobs.dataSync() as Float32Array, entropy: constants.entropy?.dataSync() as Float32Array });
        return { loss: lossOf(lp), metrics: { entropy_sum: tf.sum(constants.entropy as tf.Tensor2D) as tf.Scalar } };
      };
      const checkpointed = await checkpointedGradients(lm.model, nextTokenRows(rows), trainer.attachment.variablesByLayer(), lossSeeing, { chunk: 256, withEntropy: true });
      expect(tf.memory().numTensors - before).toBe(vars.length);
      // The values the loss saw, and the step returned: log-probs and entropies as the taped forward computes them.
      const reference = trainer.forward(rows, 256, true);
      const [logprobs, entropy] = [reference.logprobs.dataSync(), (reference.entropy as tf.Tensor2D).dataSync()];
      tf.dispose([reference.logprobs, reference.entropy as tf.Tensor2D]);
      for (const values of [seen[0], checkpointed.values as NextTokenValues]) {
        expect(maxAbsDiff(values.logprobs, logprobs)).toBeLessThan(1e-4);
        expect(maxAbsDiff(values.entropy ?? [], entropy)).toBeLessThan(1e-4);
      }
      const entropySum = Array.from(entropy).reduce((a, b) => a + b, 0);
      expect(entropySum).toBeGreaterThan(1);
      expect(Math.abs(checkpointed.metrics.entropy_sum - entropySum)).toBeLessThan(1e-4 * entropySum);
      expectTapedGradients(checkpointed, taped, vars);
      weights.dispose();
    } finally {
      trainer.dispose();
    }
  });

  // The recompute takes each kept output, projections' and attention's (and the backward
  // through the head each kept chunk's softmax), instead of computing it again: the same
  // values, so the same gradients to the bit, whether the budget keeps all of them or none.
  // Chunks of 8 positions: several.
  it('keeps the projections\' and attention\'s outputs and the head\'s softmax its budget allows, with the same gradients whatever the budget', async () => {
    const trainer = rankTwoTrainer(8, (i, name) => 0.05 * Math.sin(5 * i + name.length));
    const take = jest.spyOn(KeptProducts.prototype, 'take');
    const head = jest.spyOn(lm.model.lmHead, 'forward');
    try {
      const rows = [buildSftSequence(lm, CONVERSATIONS[0]).tokens, buildSftSequence(lm, CONVERSATIONS[2]).tokens];
      const lossOf = (lp: tf.Tensor2D) => tf.neg(tf.sum(lp)) as tf.Scalar;
      const positions = nextTokenRows(rows).rows * nextTokenRows(rows).length;
      const chunks = Math.ceil(positions / 8);
      expect(chunks).toBeGreaterThan(2);
      const gradients = async (keptProductsBytes: number) => {
        take.mockClear();
        head.mockClear();
        // The recomputing path (singlePass off): a budget that held every block's activations would run each block once instead.
        const { value, grads } = await checkpointedGradients(lm.model, nextTokenRows(rows), trainer.attachment.variablesByLayer(), lossOf, { chunk: 8, withEntropy: false, keptProductsBytes, singlePass: false });
        const taken = take.mock.results.filter((r) => r.value !== null).length;
        const bits = new Map([...grads].map(([name, g]) => [name, Array.from(g.dataSync())]));
        grads.forEach((g) => g.dispose());
        return { value, bits, taken, headCalls: head.mock.calls.length };
      };
      await gradients(0); // packs the weights on first use
      const before = tf.memory().numTensors;
      const [none, all] = [await gradients(0), await gradients(1 << 30)];
      // Nothing kept outlives the step.
      expect(tf.memory().numTensors).toBe(before);
      // q|k|v, the attention, o and gate|up of every layer.
      expect([none.taken, all.taken]).toEqual([0, 4 * lm.config.numLayers]);
      // Every chunk once for the values; with no budget every chunk but the first again for the gradient.
      expect([none.headCalls, all.headCalls]).toEqual([2 * chunks - 1, chunks]);
      expect(all.value).toBe(none.value);
      expect(all.bits).toEqual(none.bits);
    } finally {
      take.mockRestore();
      head.mockRestore();
      trainer.dispose();
    }
  });

  // Chunks of 256 positions keep the head's softmax for the backward pass; chunks of 8 recompute it.
  it.each([256, 8])('runs the lm_head only on the positions the loss scores, with the taped pass\'s gradients (chunks of %i)', async (chunk) => {
    const trainer = rankTwoTrainer(7, (i, name) => 0.05 * Math.sin(7 * i + name.length));
    try {
      const rows = [buildSftSequence(lm, CONVERSATIONS[0]).tokens, buildSftSequence(lm, CONVERSATIONS[1]).tokens];
      const T = Math.max(...rows.map((r) => r.length)) - 1;
      // Every third position scored, the rest (and the shorter row's padding) not.
      const w = Float32Array.from({ length: 2 * T }, (_, i) => (i % 3 === 0 && i % T < rows[Math.floor(i / T)].length - 1 ? 1 + 0.5 * Math.sin(i) : 0));
      const weights = tf.tensor2d(w, [2, T]);
      const lossOf = (lp: tf.Tensor2D) => tf.neg(tf.sum(tf.mul(lp, weights))) as tf.Scalar;
      const vars = trainer.attachment.variables();
      const taped = tf.variableGrads(() => tf.tidy(() => lossOf(trainer.forward(rows, 256, false).logprobs)), vars);
      const seen: NextTokenValues[] = [];
      const lossSeeing: NextTokenLoss = (lp, constants) => {
        seen.push({ logprobs: constants.logprobs.dataSync() as Float32Array, entropy: constants.entropy?.dataSync() as Float32Array });
        return lossOf(lp);
      };
      const before = tf.memory().numTensors;
      const checkpointed = await checkpointedGradients(lm.model, nextTokenRows(rows), trainer.attachment.variablesByLayer(), lossSeeing, { chunk, withEntropy: true, scored: w });
      expect(tf.memory().numTensors - before).toBe(vars.length);
      // The loss saw, and the step returned, the scored positions' log-probs and entropies, and 0 elsewhere.
      const reference = trainer.forward(rows, 256, true);
      const [logprobs, entropy] = [reference.logprobs.dataSync(), (reference.entropy as tf.Tensor2D).dataSync()];
      tf.dispose([reference.logprobs, reference.entropy as tf.Tensor2D]);
      for (const values of [seen[0], checkpointed.values as NextTokenValues]) {
        for (let i = 0; i < 2 * T; i++) {
          expect(Math.abs(values.logprobs[i] - (w[i] ? logprobs[i] : 0))).toBeLessThan(1e-4);
          expect(Math.abs((values.entropy as Float32Array)[i] - (w[i] ? entropy[i] : 0))).toBeLessThan(1e-4);
        }
      }
      expectTapedGradients(checkpointed, taped, vars);
      weights.dispose();
    } finally {
      trainer.dispose();
    }
  });

  it('AdamW matches a hand-computed step (bias correction, weight decay, clipping)', async () => {
    const p = tf.variable(tf.tensor1d([1, -2]));
    const opt = new AdamW({ beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 1 });
    const g = tf.tensor1d([3, 4]);
    const norm = await opt.apply([p], [g], 0.01);
    expect(norm).toBeCloseTo(5, 5);
    // Clipped to norm 1: g' = [0.6, 0.8]; first step: m_hat = g', v_hat = g'^2, update = sign(g') = 1.
    const expected = [1 * (1 - 0.001) - 0.01, -2 * (1 - 0.001) - 0.01];
    expect(maxAbsDiff(p.dataSync(), expected)).toBeLessThan(1e-5);
    opt.dispose();
    p.dispose();
    g.dispose();
  });

  it('SFT drives the loss down by 90% and the model then answers as trained, greedily', async () => {
    // A large alpha/r: the tiny model's hidden states are dominated by one shared direction,
    // so the adapter needs large deltas to move them (found by a small sweep).
    const trainer = new LoraTrainer(lm, { r: 8, alpha: 64, targetModules: DEFAULT_LORA_SPEC.targetModules }, undefined, { seed: 1 });
    try {
      const before = await trainer.sftLoss(CONVERSATIONS);
      const seen: StepMetrics[] = [];
      for (let epoch = 0; epoch < 45; epoch++) {
        await trainer.trainSft(CONVERSATIONS, { batchSize: 4, learningRate: 5e-3, assistantTurns: 'all' }, (m) => {
          seen.push(m);
        });
      }
      const after = await trainer.sftLoss(CONVERSATIONS);
      expect(after).toBeLessThan(0.1 * before);
      expect(Object.keys(seen[0]).sort()).toEqual(['grad_norm', 'learning_rate', 'loss', 'num_tokens', 'num_trainable_tokens', 'tokens_per_second']);
      expect(seen[0].num_trainable_tokens).toBeGreaterThan(10);

      const prompt = lm.tokenizer.encode(lm.chatTemplate!.render([{ role: 'user', content: 'capital of France?' }], { addGenerationPrompt: true }));
      const out = await generate(lm, prompt, { temperature: 0, maxTokens: 8 });
      expect(out.text).toBe('Paris');

      // The adapter written in PEFT layout reloads to identical logits.
      const dir = tempDir('sft-adapter');
      await writePeftAdapter(dir, { baseModel: lm.dir, spec: trainer.spec, tensors: await trainer.exportAdapter() });
      const trained = logits(prompt);
      trainer.dispose();
      const base = logits(prompt);
      expect(maxAbsDiff(base[base.length - 1], trained[trained.length - 1])).toBeGreaterThan(1e-2);
      const served = applyAdapter(lm, await readPeftAdapter(dir, lm.config));
      const reloaded = logits(prompt);
      reloaded.forEach((row, t) => expect(maxAbsDiff(row, trained[t])).toBeLessThan(1e-4));
      expect((await generate(lm, prompt, { temperature: 0, maxTokens: 8 })).text).toBe('Paris');
      served.detach();
      logits(prompt).forEach((row, t) => expect(maxAbsDiff(row, base[t])).toBe(0));
      served.dispose();
    } finally {
      trainer.dispose();
    }
  }, 180_000);

  it('uses one learning rate per batch and stops between steps when aborted', async () => {
    const trainer = new LoraTrainer(lm, { r: 2, alpha: 4, targetModules: ['q_proj'] });
    try {
      const rates: number[] = [];
      await trainer.trainSft(CONVERSATIONS, { batchSize: 2, learningRate: [1e-3, 2e-3], assistantTurns: 'all' }, (m) => {
        rates.push(m.learning_rate);
      });
      expect(rates).toEqual([1e-3, 2e-3]);
      expect(() => trainer.planSft(CONVERSATIONS, { batchSize: 1, learningRate: [1e-3], assistantTurns: 'all' })).toThrow(/1 values for 4 batches/);
      const controller = new AbortController();
      let steps = 0;
      const run = trainer.trainSft(CONVERSATIONS, { batchSize: 1, learningRate: 1e-3, assistantTurns: 'all' }, () => {
        steps++;
        controller.abort();
      }, controller.signal);
      await expect(run).rejects.toThrow(/cancelled/);
      expect(steps).toBe(1);
    } finally {
      trainer.dispose();
    }
  });
});
