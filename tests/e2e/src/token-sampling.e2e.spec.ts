import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { putBundleFromDir, readBundle } from '@trainyard/artifacts';
import { ErrorCode, SampleTokensReply, SampleTokensRequest, Subjects, TokenSamplingParams, WireError } from '@trainyard/contracts';
import { LoadedModel, loadModel, LoraAttachment, readPeftAdapter, SeededRandom, selectBackend, sequenceLogprobs, writePeftAdapter } from '@trainyard/engine';
import { connect, JSONCodec, NatsConnection } from 'nats';
import { Stack } from './support/stack';

// Token sampling (what Tinker's asample runs on) through the real stack: chat's
// chat.tokens.sample.v1 RPC, called over the stack's own NATS in Nest's wire format, resolving
// the model in the registry, admitting and queueing the sampling, and the inference worker (on
// wasm) decoding it. The logprobs it returns are checked against the engine's own forward pass
// over the same weights, computed here: what a trainer computes for the same tokens.

const PROMPT = [10, 17, 24, 31, 38, 45];

describe('token sampling over NATS (chat.tokens.sample.v1)', () => {
  let stack: Stack;
  let nc: NatsConnection;
  let model: string;
  let entityId: string;
  let key: string;
  let lm: LoadedModel;

  beforeAll(async () => {
    stack = await Stack.start();
    model = stack.addTinyModel();
    key = (await stack.createKey('acme')).key;
    entityId = await stack.entityId('acme');
    nc = await connect({ servers: stack.nats.url });
    await selectBackend('wasm');
    lm = await loadModel(join(stack.modelsDir, model));
  }, 120_000);

  afterAll(async () => {
    lm?.dispose();
    await nc?.close();
    await stack?.stop();
  }, 60_000);

  /** The RPC as the gateway sends it (Nest's NATS wire format): the reply, or the coded error it answered with. */
  async function sample(extra: Partial<SampleTokensRequest> = {}, params: Partial<TokenSamplingParams> = {}): Promise<SampleTokensReply | { error: WireError }> {
    const request: SampleTokensRequest = {
      request_id: randomUUID(),
      entity_id: entityId,
      entity_name: 'acme',
      model,
      prompt_tokens: PROMPT,
      num_samples: 4,
      sampling_params: { max_tokens: 12, temperature: 1, top_k: -1, top_p: 1, stop: [], seed: 42, ...params },
      prompt_logprobs: false,
      topk_prompt_logprobs: 0,
      ...extra,
    };
    const subject = Subjects.chat.sampleTokens.name;
    const msg = await nc.request(subject, JSONCodec().encode({ pattern: subject, id: randomUUID(), data: request }), { timeout: 60_000 });
    const reply = JSONCodec<{ response?: SampleTokensReply; err?: WireError }>().decode(msg.data);
    return reply.err ? { error: reply.err } : (reply.response as SampleTokensReply);
  }

  async function sampled(extra: Partial<SampleTokensRequest> = {}, params: Partial<TokenSamplingParams> = {}): Promise<SampleTokensReply> {
    const reply = await sample(extra, params);
    if ('error' in reply) throw new Error(`sampling failed: ${JSON.stringify(reply.error)}`);
    return reply;
  }

  /** The engine's log p(token | everything before it) for each sampled token, as the trainer computes it. */
  async function ownLogprobs(tokens: number[]): Promise<number[]> {
    return [...(await sequenceLogprobs(lm.model, [...PROMPT, ...tokens]))].slice(PROMPT.length - 1);
  }

  function expectClose(got: (number | null)[], want: number[]): void {
    expect(got).toHaveLength(want.length);
    got.forEach((value, i) => expect(Math.abs((value as number) - want[i])).toBeLessThan(1e-4));
  }

  it('samples 4 sequences with their lengths, stop reasons and the logprobs the engine computes for those tokens', async () => {
    const reply = await sampled({ prompt_logprobs: true, topk_prompt_logprobs: 3 });
    expect(reply).toMatchObject({ model, base_model: model, checkpoint_step: null, model_id: null });
    expect(reply.sequences).toHaveLength(4);
    const eos = new Set(lm.eosTokenIds);
    for (const sequence of reply.sequences) {
      expect(sequence.tokens.length).toBeGreaterThan(0);
      expect(sequence.tokens.length).toBeLessThanOrEqual(12);
      expect(sequence.logprobs).toHaveLength(sequence.tokens.length);
      const last = sequence.tokens[sequence.tokens.length - 1];
      if (sequence.stop_reason === 'length') expect(sequence.tokens).toHaveLength(12);
      else expect(eos.has(last)).toBe(true);
      // Nothing before the last token ended the sample.
      expect(sequence.tokens.slice(0, -1).some((t) => eos.has(t))).toBe(false);
      expectClose(sequence.logprobs, await ownLogprobs(sequence.tokens));
    }
    // Samples 0..3 draw with seeds 42..45.
    expect(new Set(reply.sequences.map((s) => s.tokens.join(','))).size).toBeGreaterThan(1);

    const prompt = [...(await sequenceLogprobs(lm.model, PROMPT))];
    expect(reply.prompt_logprobs?.[0]).toBeNull();
    expectClose((reply.prompt_logprobs ?? []).slice(1), prompt);
    const topk = reply.topk_prompt_logprobs ?? [];
    expect(topk).toHaveLength(PROMPT.length);
    expect(topk[0]).toBeNull();
    for (const [t, row] of topk.entries()) {
      if (t === 0) continue;
      expect(row).toHaveLength(3);
      const values = (row ?? []).map(([, logprob]) => logprob);
      expect([...values].sort((a, b) => b - a)).toEqual(values);
      // The prompt's own token is among the top 3 exactly when its logprob reaches the third's.
      const own = row?.find(([id]) => id === PROMPT[t]);
      if (own) expect(Math.abs(own[1] - prompt[t - 1])).toBeLessThan(1e-4);
      else expect(prompt[t - 1]).toBeLessThanOrEqual(values[2] + 1e-4);
    }
  });

  it('gives the same samples for the same seed and others for another seed', async () => {
    const [a, b, c] = [await sampled(), await sampled(), await sampled({}, { seed: 7 })];
    expect(b.sequences).toEqual(a.sequences);
    expect(c.sequences.map((s) => s.tokens)).not.toEqual(a.sequences.map((s) => s.tokens));
  });

  it('ends a sample on a stop token, which it includes', async () => {
    const first = (await sampled({ num_samples: 1 })).sequences[0];
    const stopAt = first.tokens[2];
    const stopped = (await sampled({ num_samples: 1 }, { stop: [stopAt] })).sequences[0];
    expect(stopped.stop_reason).toBe('stop');
    expect(stopped.tokens).toEqual(first.tokens.slice(0, first.tokens.indexOf(stopAt) + 1));
  });

  it("samples from a checkpoint's LoRA adapter, with the logprobs of the adapted model", async () => {
    const created = await stack.json<{ id: string; entity: string; project: string; name: string }>('POST', '/v1/preview/models', key, {
      entity: null,
      project: 'tokens-e2e',
      name: 'agent',
      base_model: model,
      return_existing: true,
    });
    // Step 1: the step-0 adapter with B drawn at random, so that the adapter changes the logits.
    const adapter = await stack.withDatabase(async (db) => {
      const { rows: [first] } = await db.query('SELECT adapter_path FROM checkpoints WHERE model_id = $1 AND step = 0', [created.id]);
      const store = stack.artifacts();
      const dir = mkdtempSync(join(tmpdir(), 'token-sampling-adapter-'));
      for (const [name, data] of await readBundle(store, first.adapter_path.replace(/^sha256:/, ''))) writeFileSync(join(dir, name), data);
      const step0 = await readPeftAdapter(dir, lm.config);
      const rng = new SeededRandom(3);
      for (const [name, tensor] of step0.tensors) if (name.includes('lora_B')) tensor.data = rng.normals(tensor.data.length, 0.05);
      rmSync(dir, { recursive: true });
      mkdirSync(dir);
      await writePeftAdapter(dir, step0);
      const bundle = await putBundleFromDir(store, dir);
      rmSync(dir, { recursive: true });
      await db.query('INSERT INTO checkpoints (id, model_id, step, adapter_path, adapter_sha256) VALUES ($1, $2, 1, $3, $4)', [randomUUID(), created.id, `sha256:${bundle.sha256}`, 'e2e-random-b']);
      await db.query('UPDATE models SET last_step = 1 WHERE id = $1', [created.id]);
      return step0;
    });
    const reply = await sampled({ model: `${created.entity}/${created.project}/${created.name}:step1` });
    expect(reply).toMatchObject({ checkpoint_step: 1, model_id: created.id, base_model: model });
    const attachment = LoraAttachment.attach(lm.model, adapter.spec, adapter.tensors);
    try {
      for (const sequence of reply.sequences) expectClose(sequence.logprobs, await ownLogprobs(sequence.tokens));
    } finally {
      attachment.dispose();
    }
    // And the adapter mattered: the base model gives other numbers for the same tokens.
    const base = await ownLogprobs(reply.sequences[0].tokens);
    expect(Math.max(...reply.sequences[0].logprobs.map((l, i) => Math.abs(l - base[i])))).toBeGreaterThan(1e-3);
  });

  it('refuses an unknown model with model_not_found and a bad request with invalid_request naming the field', async () => {
    expect(await sample({ model: 'acme/nope/missing' })).toMatchObject({ error: { code: ErrorCode.ModelNotFound } });
    expect(await sample({ prompt_tokens: [1, lm.config.vocabSize] })).toMatchObject({ error: { code: ErrorCode.InvalidRequest, details: { param: 'prompt' } } });
    expect(await sample({ num_samples: 0 })).toMatchObject({ error: { code: ErrorCode.InvalidRequest, details: { param: 'num_samples' } } });
    expect(await sample({}, { top_p: 2 })).toMatchObject({ error: { code: ErrorCode.InvalidRequest, details: { param: 'sampling_params.top_p' } } });
  });
});
