import * as tf from '@tensorflow/tfjs-core';
import { generate } from '../../src/generate';
import { LoadedModel, loadModel } from '../../src/loader';
import { applyAdapter } from '../../src/lora/lora-layer';
import { DEFAULT_LORA_SPEC } from '../../src/lora/peft';
import { LoraTrainingClient, TrainingDatum, primitiveLoss, readTrainingState, resolveLossConfig, writeTrainingState } from '../../src/training/primitives';
import { maxAbsDiff, makeTiny, tempDir, useBackend } from '../helpers';
import { join } from 'node:path';

const ADAM = { learningRate: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, gradClipNorm: 0 };

/** A datum of `tokens` in Tinker's layout: inputs tokens[:-1], targets tokens[1:], weight 1 after `prompt` tokens. */
function sftDatum(tokens: number[], prompt: number): TrainingDatum {
  const T = tokens.length - 1;
  return {
    inputTokens: tokens.slice(0, -1),
    targetTokens: tokens.slice(1),
    lossInputs: { weights: Array.from({ length: T }, (_, t) => (t + 1 >= prompt ? 1 : 0)) },
  };
}

describe('training primitives (wasm, tiny model)', () => {
  let lm: LoadedModel;
  let data: TrainingDatum[];

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('primitives'));
    const encode = (s: string) => lm.tokenizer.encode(s);
    data = [
      sftDatum(encode('the capital of France is Paris'), 4),
      sftDatum(encode('two plus two is four'), 3),
      sftDatum(encode('the sky is blue on a clear day'), 3),
      sftDatum(encode('ice is cold'), 2),
    ];
  });
  afterAll(() => lm.dispose());

  it('a supervised loop of forward_backward (cross_entropy) and optim_step lowers the loss', async () => {
    const client = new LoraTrainingClient(lm, DEFAULT_LORA_SPEC, undefined, { seed: 1 });
    try {
      const losses: number[] = [];
      for (let step = 0; step < 6; step++) {
        const out = await client.forwardBackward(data, 'cross_entropy');
        losses.push(out.metrics['loss:sum']);
        expect(out.logprobs.map((l) => l.length)).toEqual(data.map((d) => d.inputTokens.length));
        await client.optimStep(ADAM);
      }
      expect(client.step).toBe(6);
      expect(losses[5]).toBeLessThan(0.8 * losses[0]);
    } finally {
      client.dispose();
    }
  });

  it("forward's log-probs are the inference engine's for the same tokens (within 1e-4), before and after a step", async () => {
    const client = new LoraTrainingClient(lm, DEFAULT_LORA_SPEC, undefined, { seed: 2 });
    try {
      await client.forwardBackward(data, 'cross_entropy');
      await client.optimStep(ADAM);
      const prompt = lm.tokenizer.encode('the capital of France is');
      const served = applyAdapter(lm, { spec: DEFAULT_LORA_SPEC, tensors: await client.exportAdapter() });
      const sampled = await generate(lm, prompt, { temperature: 1, seed: 5, maxTokens: 6 });
      served.dispose();
      const tokens = [...prompt, ...sampled.tokenIds];
      const out = await client.forward([{ inputTokens: tokens.slice(0, -1), targetTokens: tokens.slice(1), lossInputs: {} }]);
      const trainer = out.logprobs[0].slice(prompt.length - 1);
      expect(trainer.length).toBe(sampled.tokens.length);
      expect(maxAbsDiff(trainer, sampled.tokens.map((t) => t.logprob))).toBeLessThan(1e-4);
    } finally {
      client.dispose();
    }
  });

  it('gradients accumulated over two forward_backward calls equal one call on both halves', async () => {
    const halves = new LoraTrainingClient(lm, DEFAULT_LORA_SPEC, undefined, { seed: 3 });
    const whole = new LoraTrainingClient(lm, DEFAULT_LORA_SPEC, undefined, { seed: 3 });
    try {
      const a = await halves.forwardBackward(data.slice(0, 2), 'cross_entropy');
      const b = await halves.forwardBackward(data.slice(2), 'cross_entropy');
      const all = await whole.forwardBackward(data, 'cross_entropy');
      expect(halves.pendingGradients).toBe(2);
      expect(Math.abs(a.metrics['loss:sum'] + b.metrics['loss:sum'] - all.metrics['loss:sum'])).toBeLessThan(1e-4 * all.metrics['loss:sum']);
      const [g1, g2] = [await halves.gradientValues(), await whole.gradientValues()];
      expect(g1.length).toBe(g2.length);
      expect(g2.every((g) => g !== null)).toBe(true);
      g2.forEach((values, i) => {
        const scale = Math.max(...Array.from(values!, Math.abs), 1e-12);
        expect(maxAbsDiff(g1[i]!, values!)).toBeLessThan(1e-4 * scale + 1e-7);
      });
      // And the same Adam step from both.
      await halves.optimStep(ADAM);
      await whole.optimStep(ADAM);
      expect(halves.pendingGradients).toBe(0);
      const [p1, p2] = [await halves.exportAdapter(), await whole.exportAdapter()];
      for (const [name, t] of p2) expect(maxAbsDiff(p1.get(name)!.data, t.data)).toBeLessThan(1e-5);
    } finally {
      halves.dispose();
      whole.dispose();
    }
  });

  it('a saved state (adapter and Adam moments), loaded into another client, trains on exactly as the first one does', async () => {
    const first = new LoraTrainingClient(lm, DEFAULT_LORA_SPEC, undefined, { seed: 4 });
    const second = new LoraTrainingClient(lm, DEFAULT_LORA_SPEC, undefined, { seed: 5 });
    try {
      for (let i = 0; i < 2; i++) {
        await first.forwardBackward(data, 'cross_entropy');
        await first.optimStep(ADAM);
      }
      const file = join(tempDir('state'), 'state.safetensors');
      writeTrainingState(file, await first.exportState());
      await second.loadState(readTrainingState(file), { optimizer: true });
      expect(second.step).toBe(2);
      // The same next step from both: equal only if the moments and the step count came along.
      await first.forwardBackward(data, 'cross_entropy');
      await first.optimStep(ADAM);
      await second.forwardBackward(data, 'cross_entropy');
      await second.optimStep(ADAM);
      const [a, b] = [await first.exportAdapter(), await second.exportAdapter()];
      for (const [name, t] of a) expect(maxAbsDiff(b.get(name)!.data, t.data)).toBeLessThan(1e-6);

      // Without the optimizer, Adam starts over: the next step differs.
      const fresh = new LoraTrainingClient(lm, DEFAULT_LORA_SPEC);
      try {
        await fresh.loadState(readTrainingState(file), { optimizer: false });
        expect(fresh.step).toBe(0);
        await expect(fresh.loadState({ ...readTrainingState(file), spec: { ...DEFAULT_LORA_SPEC, r: 4 } }, { optimizer: true })).rejects.toThrow(/is not this training client's/);
      } finally {
        fresh.dispose();
      }
    } finally {
      first.dispose();
      second.dispose();
    }
  });

  it('refuses data that does not fit the loss or the model, naming the datum and field', async () => {
    const client = new LoraTrainingClient(lm, DEFAULT_LORA_SPEC);
    try {
      const bad = { ...data[0], lossInputs: {} };
      await expect(client.forwardBackward([data[1], bad], 'cross_entropy')).rejects.toThrow('data[1].loss_fn_inputs.weights is missing');
      await expect(client.forwardBackward([{ ...data[0], targetTokens: [1] }], 'cross_entropy')).rejects.toThrow(/target_tokens has 1 values/);
      await expect(client.forwardBackward(data, 'ppo', { clip: 1 })).rejects.toThrow('loss_fn_config.clip is not a setting of ppo');
      expect(client.pendingGradients).toBe(0);
    } finally {
      client.dispose();
    }
  });
});

describe('built-in losses on hand-made log-probs', () => {
  const l = [-1.0, -0.5, -2.0];
  const q = [-1.2, -0.5, -0.1];
  const A = [1.0, -1.0, 2.0];
  const datum: TrainingDatum = { inputTokens: [1, 2, 3], targetTokens: [2, 3, 4], lossInputs: { logprobs: q, advantages: A, weights: [0, 1, 1] } };
  const lossAndGrad = (fn: Parameters<typeof primitiveLoss>[0], config: Record<string, number> = {}) => {
    const c = resolveLossConfig(fn, config);
    const seen = tf.tensor2d(l, [1, 3]);
    const { value, grad } = tf.valueAndGrad((x: tf.Tensor) => primitiveLoss(fn, c, [datum], x as tf.Tensor2D, seen))(tf.tensor2d(l, [1, 3]));
    return { value: value.dataSync()[0], grad: Array.from(grad.dataSync()) };
  };
  const r = l.map((v, i) => Math.exp(v - q[i]));

  beforeAll(() => useBackend('cpu'));

  it('cross_entropy is the weighted sum of -logprobs', () => {
    const { value, grad } = lossAndGrad('cross_entropy');
    expect(value).toBeCloseTo(2.5, 5);
    expect(grad).toEqual([-0, -1, -1]);
  });

  it('importance_sampling is -sum(ratio * A)', () => {
    const { value, grad } = lossAndGrad('importance_sampling');
    expect(value).toBeCloseTo(-r.reduce((s, x, i) => s + x * A[i], 0), 5);
    grad.forEach((g, i) => expect(g).toBeCloseTo(-r[i] * A[i], 5));
  });

  it('ppo takes the pessimistic of the clipped and unclipped terms (default clip 0.8..1.2)', () => {
    const clip = (x: number) => Math.min(1.2, Math.max(0.8, x));
    const want = -r.reduce((s, x, i) => s + Math.min(x * A[i], clip(x) * A[i]), 0);
    expect(lossAndGrad('ppo').value).toBeCloseTo(want, 5);
    // Token 2: ratio 0.15 < 0.8 with A > 0: the unclipped term is smaller and keeps its gradient.
    expect(lossAndGrad('ppo').grad[2]).toBeCloseTo(-r[2] * A[2], 5);
  });

  it('cispo weighs -A * logprob by the clipped ratio, without a gradient through the ratio', () => {
    const coef = r.map((x) => Math.min(4, Math.max(0, x)));
    const { value, grad } = lossAndGrad('cispo');
    expect(value).toBeCloseTo(-coef.reduce((s, c, i) => s + c * A[i] * l[i], 0), 5);
    grad.forEach((g, i) => expect(g).toBeCloseTo(-coef[i] * A[i], 5));
  });

  it('dro is -sum(l * A - beta/2 (l - q)^2) with loss_fn_config.beta', () => {
    const { value } = lossAndGrad('dro', { beta: 0.5 });
    expect(value).toBeCloseTo(-l.reduce((s, v, i) => s + v * A[i] - 0.25 * (v - q[i]) ** 2, 0), 5);
  });
});
