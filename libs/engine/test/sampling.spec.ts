import { ChatTemplate } from '../src/chat-template';
import { GenerationParams, SequenceGenerator, generate, generateBatch } from '../src/generate';
import { LoadedModel, loadModel } from '../src/loader';
import { SeededRandom } from '../src/random';
import { sampleToken } from '../src/sampling';
import { decodeTokens, evenTokensOnly, makeTiny, useBackend } from './helpers';

const logits = Float32Array.from([2, 1, 0.5, 3, -1, 0, 2.5, 1.5]);
const softmax = (x: Float32Array, t = 1) => {
  const m = Math.max(...x);
  const e = Array.from(x, (v) => Math.exp((v - m) / t));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / z);
};

describe('sampleToken', () => {
  it('is greedy at temperature 0 and reports logprobs', () => {
    const t = sampleToken(logits, { temperature: 0, topLogprobs: 3 }, new SeededRandom(1));
    expect(t.id).toBe(3);
    expect(t.logprob).toBeCloseTo(Math.log(softmax(logits)[3]), 5);
    expect(t.topLogprobs.map((a) => a.id)).toEqual([3, 6, 0]);
  });

  it('draws the same tokens from the same seed, different ones from another', () => {
    const draw = (seed: number) => {
      const rng = new SeededRandom(seed);
      return Array.from({ length: 40 }, () => sampleToken(logits, { temperature: 1 }, rng).id);
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it('follows the tempered distribution and reports logprobs under it', () => {
    const rng = new SeededRandom(5);
    const counts = new Array(logits.length).fill(0);
    const p = softmax(logits, 0.7);
    for (let i = 0; i < 20000; i++) {
      const t = sampleToken(logits, { temperature: 0.7 }, rng);
      counts[t.id]++;
      if (i < 20) expect(t.logprob).toBeCloseTo(Math.log(p[t.id]), 5);
    }
    counts.forEach((c, i) => expect(Math.abs(c / 20000 - p[i])).toBeLessThan(0.015));
  });

  it('top_k keeps only the k most likely tokens and renormalises', () => {
    const rng = new SeededRandom(9);
    const seen = new Set<number>();
    for (let i = 0; i < 500; i++) {
      const t = sampleToken(logits, { temperature: 1, topK: 2, topLogprobs: 5 }, rng);
      seen.add(t.id);
      expect(t.topLogprobs.map((a) => a.id)).toEqual([3, 6]);
      const p = softmax(Float32Array.from([3, 2.5]));
      expect(Math.exp(t.logprob)).toBeCloseTo(t.id === 3 ? p[0] : p[1], 5);
    }
    expect([...seen].sort()).toEqual([3, 6]);
  });

  it('top_p keeps the smallest set reaching p', () => {
    const p = softmax(logits); // sorted: 3 (.33), 6 (.20), 0 (.12), 7 (.07)...
    const rng = new SeededRandom(3);
    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) seen.add(sampleToken(logits, { topP: p[3] + p[6] + 0.01 }, rng).id);
    expect([...seen].sort()).toEqual([0, 3, 6]);
  });

  it('top_p 0 is greedy, as OpenAI and vLLM read it, whatever the temperature', () => {
    const rng = new SeededRandom(5);
    for (const temperature of [0.7, 1, 2]) {
      for (const logprobs of [true, false]) {
        const t = sampleToken(logits, { temperature, topP: 0, logprobs, topLogprobs: 2 }, rng);
        expect(t.id).toBe(3);
        if (logprobs) expect(t.logprob).toBeCloseTo(Math.log(softmax(logits)[3]), 5);
      }
    }
  });

  it('without logprobs, keeps a drawn token the quick check allows, else draws from what the processor leaves, in the processor\'s distribution', () => {
    const rng = new SeededRandom(11);
    const allowed = new Set([0, 3, 6]);
    const onlyAllowed = (l: Float32Array) => l.forEach((_, i) => !allowed.has(i) && (l[i] = -Infinity));
    let processed = 0;
    const params = {
      temperature: 1,
      logprobs: false,
      logitsProcessor: (l: Float32Array) => {
        processed++;
        onlyAllowed(l);
      },
      quickCheck: (id: number) => allowed.has(id),
    };
    const counts = new Array(logits.length).fill(0);
    const N = 20000;
    for (let i = 0; i < N; i++) {
      const t = sampleToken(logits, params, rng);
      counts[t.id]++;
      expect(Number.isNaN(t.logprob)).toBe(true);
    }
    const p = softmax(logits);
    const mass = p[0] + p[3] + p[6];
    counts.forEach((c, i) => expect(Math.abs(c / N - (allowed.has(i) ? p[i] / mass : 0))).toBeLessThan(0.015));
    // The processor ran only for the draws the check refused: about (1 - p(A)) of them.
    expect(processed / N).toBeGreaterThan(1 - mass - 0.03);
    expect(processed / N).toBeLessThan(1 - mass + 0.03);
  });

  it("with only the model's logprobs, also keeps a drawn token the quick check allows, and reports the model's logprob of it", () => {
    const rng = new SeededRandom(12);
    const allowed = new Set([0, 3, 6]);
    let processed = 0;
    const params = {
      temperature: 0.8,
      modelLogprobs: true,
      logitsProcessor: (l: Float32Array) => {
        processed++;
        l.forEach((_, i) => !allowed.has(i) && (l[i] = -Infinity));
      },
      quickCheck: (id: number) => allowed.has(id),
    };
    const model = softmax(logits, 0.8);
    const counts = new Array(logits.length).fill(0);
    const N = 20000;
    for (let i = 0; i < N; i++) {
      const t = sampleToken(logits, params, rng);
      counts[t.id]++;
      expect(t.logprob).toBeCloseTo(Math.log(model[t.id]), 5);
    }
    const mass = model[0] + model[3] + model[6];
    counts.forEach((c, i) => expect(Math.abs(c / N - (allowed.has(i) ? model[i] / mass : 0))).toBeLessThan(0.015));
    expect(processed / N).toBeLessThan(1 - mass + 0.03);
    // With top logprobs the alternatives need the whole row: the processor runs every time.
    processed = 0;
    for (let i = 0; i < 20; i++) sampleToken(logits, { ...params, topLogprobs: 2 }, rng);
    expect(processed).toBe(20);
  });

  it('runs the processor whatever the quick check says under top_k or top_p, whose cut depends on what it allows', () => {
    const rng = new SeededRandom(4);
    for (const cut of [{ topK: 2 }, { topP: 0.5 }]) {
      let processed = 0;
      for (let i = 0; i < 20; i++) sampleToken(logits, { temperature: 1, logprobs: false, ...cut, logitsProcessor: () => processed++, quickCheck: () => true }, rng);
      expect(processed).toBe(20);
    }
    let greedy = 0;
    sampleToken(logits, { temperature: 0, topK: 2, logprobs: false, logitsProcessor: () => greedy++, quickCheck: () => true }, rng);
    expect(greedy).toBe(0);
  });

  it('without logprobs, skips their work and reports NaN; with them, runs the processor whatever the quick check says', () => {
    const rng = new SeededRandom(2);
    expect(Number.isNaN(sampleToken(logits, { temperature: 0, logprobs: false }, rng).logprob)).toBe(true);
    let processed = 0;
    const t = sampleToken(logits, { temperature: 0, topLogprobs: 2, logitsProcessor: () => processed++, quickCheck: () => true }, rng);
    expect(processed).toBe(1);
    expect(t.logprob).toBeCloseTo(Math.log(softmax(logits)[3]), 5);
    expect(t.topLogprobs).toHaveLength(2);
  });

  it("with modelLogprobs, reports the model's logprobs before the processor restricts the choice", () => {
    const onlyEven = (l: Float32Array) => l.forEach((_, i) => i % 2 && (l[i] = -Infinity));
    for (const temperature of [0, 0.7, 1]) {
      const t = sampleToken(logits, { temperature, topLogprobs: 3, logitsProcessor: onlyEven, modelLogprobs: true }, new SeededRandom(5));
      expect(t.id % 2).toBe(0);
      const model = softmax(logits, temperature === 0 ? 1 : temperature);
      expect(t.logprob).toBeCloseTo(Math.log(model[t.id]), 5);
      // Alternatives from the model's distribution too, odd tokens included.
      const best = [...model.keys()].sort((a, b) => model[b] - model[a]).slice(0, 3);
      expect(t.topLogprobs.map((x) => x.id)).toEqual(best);
      // Without it: the restricted distribution's logprob, higher than the model's.
      const restricted = sampleToken(logits, { temperature, logitsProcessor: onlyEven }, new SeededRandom(5));
      expect(restricted.id).toBe(t.id);
      expect(restricted.logprob).toBeGreaterThan(t.logprob);
    }
  });

  it('applies the logits processor hook before sampling', () => {
    const rng = new SeededRandom(3);
    const onlyEven = (l: Float32Array) => l.forEach((_, i) => i % 2 && (l[i] = -Infinity));
    for (let i = 0; i < 200; i++) {
      const t = sampleToken(logits, { temperature: 1.5, logitsProcessor: onlyEven }, rng);
      expect(t.id % 2).toBe(0);
      expect(Number.isFinite(t.logprob)).toBe(true);
    }
    expect(sampleToken(logits, { temperature: 0, logitsProcessor: onlyEven }, rng).id).toBe(6);
  });
});

describe('sampleToken at a real vocabulary size', () => {
  const V = 49152;
  const source = new SeededRandom(21);
  const logits = Float32Array.from({ length: V }, () => 3 * source.normal());

  /** The nucleus by definition: weights sorted (ties by lower id), kept until their mass reaches p. */
  function referenceNucleus(x: Float32Array, temperature: number, p: number): { kept: Set<number>; mass: number; weights: number[] } {
    const m = x.reduce((a, v) => Math.max(a, v), -Infinity);
    const weights = Array.from(x, (v) => Math.exp((v - m) / temperature));
    const total = weights.reduce((a, w) => a + w, 0);
    const order = weights.map((_, i) => i).sort((a, b) => weights[b] - weights[a] || a - b);
    const kept = new Set<number>();
    let mass = 0;
    for (const i of order) {
      kept.add(i);
      mass += weights[i];
      if (mass >= p * total) break;
    }
    return { kept, mass, weights };
  }

  it('reports logprobs equal to a float64 log-softmax, greedy and sampled', () => {
    const m = logits.reduce((a, v) => Math.max(a, v), -Infinity);
    for (const temperature of [0, 1, 0.6]) {
      const t = temperature || 1;
      const lse = m / t + Math.log(Array.from(logits, (v) => Math.exp((v - m) / t)).reduce((a, b) => a + b, 0));
      const rng = new SeededRandom(temperature * 10);
      for (let i = 0; i < 20; i++) {
        const token = sampleToken(logits, { temperature, topLogprobs: 3 }, rng);
        expect(Math.abs(token.logprob - (logits[token.id] / t - lse))).toBeLessThan(1e-5);
        for (const alt of token.topLogprobs) expect(Math.abs(alt.logprob - (logits[alt.id] / t - lse))).toBeLessThan(1e-5);
      }
    }
  });

  it.each([0.5, 0.9, 0.95])('top_p %d keeps exactly the nucleus: draws stay in it, and logprobs are renormalised over it', (p) => {
    const { kept, mass, weights } = referenceNucleus(logits, 1, p);
    const rng = new SeededRandom(5);
    for (let i = 0; i < 500; i++) {
      const token = sampleToken(logits, { temperature: 1, topP: p }, rng);
      expect(kept.has(token.id)).toBe(true);
      expect(Math.abs(token.logprob - Math.log(weights[token.id] / mass))).toBeLessThan(1e-5);
    }
  });

  it('top_p among equal weights keeps the lower ids: the smallest set reaching p', () => {
    const flat = new Float32Array(1000).fill(0.25);
    const rng = new SeededRandom(8);
    let highest = 0;
    for (let i = 0; i < 2000; i++) {
      const token = sampleToken(flat, { temperature: 1, topP: 0.3 }, rng);
      highest = Math.max(highest, token.id);
      expect(token.logprob).toBeCloseTo(Math.log(1 / 300), 5);
    }
    expect(highest).toBe(299);
  });
});

describe('generation', () => {
  let lm: LoadedModel;
  let prompt: number[];

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('gen'));
    prompt = lm.tokenizer.encode((lm.chatTemplate as ChatTemplate).render([{ role: 'user', content: 'Tell me about trains.' }]));
  });
  afterAll(() => lm.dispose());

  it('is reproducible with a seed and stops at max tokens', async () => {
    const params: GenerationParams = { temperature: 1, seed: 11, maxTokens: 12, ignoreEos: true };
    const a = await generate(lm, prompt, params);
    const b = await generate(lm, prompt, params);
    expect(a.tokenIds).toEqual(b.tokenIds);
    expect(a.finishReason).toBe('length');
    expect(a.tokenIds).toHaveLength(12);
    expect(new Set(a.tokenIds).size).toBeGreaterThan(3);
    const c = await generate(lm, prompt, { ...params, seed: 12 });
    expect(c.tokenIds).not.toEqual(a.tokenIds);
  });

  it('gives every sequence in a batch the tokens it gets alone', async () => {
    const prompts = [prompt, prompt.slice(0, 5), [...prompt, 300, 301]];
    const params = prompts.map((_, i) => ({ temperature: 1, seed: i, maxTokens: 6 + 3 * i, ignoreEos: true }));
    const together = await generateBatch(lm, prompts, params);
    for (let i = 0; i < prompts.length; i++) {
      const alone = await generate(lm, prompts[i], params[i]);
      expect(together[i].tokenIds).toEqual(alone.tokenIds);
      together[i].tokens.forEach((t, j) => expect(t.logprob).toBeCloseTo(alone.tokens[j].logprob, 3));
    }
  });

  // What the inference worker relies on when it draws tokens on the GPU (webgpu-kernels.spec.ts there).
  it('draws the tokens it samples from the logits when given the draw instead (DecodeBatch.stepDrawn), greedy and at temperatures, a step or a run at a time', async () => {
    const prompts = [prompt, prompt.slice(0, 5), [...prompt, 300, 301]];
    const params: GenerationParams[] = [
      { temperature: 0, maxTokens: 5, ignoreEos: true },
      { temperature: 1, seed: 4, maxTokens: 8, ignoreEos: true },
      { temperature: 0.6, seed: 5, maxTokens: 3, logprobs: false },
    ];
    const sampled = await decodeTokens(lm, prompts, params, 'sampled');
    const drawn = await decodeTokens(lm, prompts, params, 'drawn');
    expect(drawn).toEqual(sampled);
    expect(drawn.map((t) => t.length)).toEqual([5, 8, expect.any(Number)]);
    expect(drawn[2].every((t) => Number.isNaN(t.logprob))).toBe(true);
    // Runs of three steps, each fed the last one's tokens (one after another here): 5 and 8 tokens end within a run.
    expect(await decodeTokens(lm, prompts, params, 'runs')).toEqual(sampled);
  });

  it('draws the rows that can be drawn, checks a processor\'s, and samples the others from their own logits in one step (DecodeBatch.stepMixed)', async () => {
    const prompts = [prompt, prompt.slice(0, 5), [...prompt, 300, 301], prompt.slice(0, 9), prompt.slice(0, 7)];
    const params: GenerationParams[] = [
      { temperature: 1, seed: 4, maxTokens: 6, ignoreEos: true },
      // top-k needs the whole row of logits.
      { temperature: 1, seed: 6, topK: 5, maxTokens: 6, ignoreEos: true },
      { temperature: 0.7, seed: 5, maxTokens: 6, ignoreEos: true },
      // A processor that refuses about half the vocabulary: drawn, checked, and sampled again from the logits where refused.
      { temperature: 1.5, seed: 7, maxTokens: 12, ignoreEos: true, modelLogprobs: true, ...evenTokensOnly() },
      // top_p 0 is greedy whatever the temperature, drawn or not.
      { temperature: 1, topP: 0, seed: 8, maxTokens: 6, ignoreEos: true, modelLogprobs: true, ...evenTokensOnly() },
    ];
    const sampled = await decodeTokens(lm, prompts, params, 'sampled');
    const mixed = await decodeTokens(lm, prompts, params, 'mixed');
    // The same tokens; a drawn token's logprob is the draw's (log w / total), not log-softmax's, the same to rounding.
    expect(mixed.map((row) => row.map((t) => t.id))).toEqual(sampled.map((row) => row.map((t) => t.id)));
    mixed.forEach((row, i) => row.forEach((t, j) => expect(Math.abs(t.logprob - sampled[i][j].logprob)).toBeLessThan(1e-6)));
    expect(sampled.map((t) => t.length)).toEqual([6, 6, 6, 12, 6]);
    expect(sampled[3].every((t) => t.id % 2 === 0)).toBe(true);
  });

  it('ends at end-of-turn by sampling, within a reasonable length', async () => {
    const results = await generateBatch(lm, [prompt, prompt, prompt, prompt], [0, 1, 2, 3].map((seed) => ({ seed, maxTokens: 400 })));
    const stopped = results.filter((r) => r.finishReason === 'stop');
    expect(stopped.length).toBeGreaterThan(0);
    for (const r of stopped) expect(r.tokenIds[r.tokenIds.length - 1]).toBe(2);
  });

  it('stops at stop strings and stop token ids, cutting the text and streaming no part of it', () => {
    const word = (s: string) => lm.tokenizer.encode(s);
    const script = [...word('Hello'), ...word(' wor'), ...word('ld'), ...word(' STOP'), ...word(' more')];
    const forced = (id: number) => Float32Array.from({ length: lm.config.vocabSize }, (_, i) => (i === id ? 10 : 0));
    const run = (params: GenerationParams) => {
      const g = new SequenceGenerator(lm.tokenizer, { temperature: 0, ...params }, lm.eosTokenIds);
      let streamed = '';
      for (const id of script) {
        const step = g.next(forced(id));
        expect(step.token.id).toBe(id);
        streamed += step.delta;
        if (step.finished) break;
      }
      return { g, streamed };
    };
    const byString = run({ stop: [' STOP', 'zzz'] });
    expect(byString.g.finishReason).toBe('stop');
    expect(byString.g.stoppedBy).toBe(' STOP');
    expect(byString.g.text).toBe('Hello world');
    expect(byString.streamed).toBe('Hello world');

    const stopId = word(' STOP')[0];
    expect(word('Hello world')).not.toContain(stopId);
    const byId = run({ stopTokenIds: [stopId] });
    expect(byId.g.stoppedBy).toBe(stopId);
    expect(byId.g.text).toBe('Hello world');

    const byLength = run({ maxTokens: 2 });
    expect(byLength.g.finishReason).toBe('length');
  });
});
