import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChatCompletionParams, ErrorCode, InferenceEvent, InferenceWorkItem, SampleTokensResult, TokenSampleWorkItem, TokenSamplingParams } from '@trainyard/contracts';
import { DecodeBatch, LoadedModel, loadModel, ModelLoadError, selectBackend, sequenceLogprobs } from '@trainyard/engine';
import { makeModel } from '@trainyard/engine/files';
import { MessageBus } from '@trainyard/messaging';
import { GracefulShutdown, ReadinessService, WorkerLoad } from '@trainyard/runtime';
import { chatCompletionParams } from '@trainyard/testing';
import { InferenceWorkerConfig } from '../config/inference-worker.config';
import { AdapterCache } from '../models/adapter-cache';
import { ModelCache } from '../models/model-cache';
import { InferenceScheduler } from './inference-scheduler';

/**
 * The scheduler with a real tiny model (it loads and decodes in milliseconds) and hand-written
 * fakes for what it talks to: the bus records each completion's events and which completions
 * answer liveness probes, the model cache hands out the tiny model (or a load the test
 * controls). Each test drives it the way the work-queue consumer and the cancel subscription do.
 */

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: Error): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** What the scheduler publishes and answers, by completion. */
class FakeBus {
  /** Each completion's events, by reply subject, with the held sequences seen as each went out. */
  readonly events = new Map<string, (InferenceEvent & { seq: number })[]>();
  readonly heldAtEvent: number[] = [];
  /** Completions whose liveness subject is answered now. */
  readonly answering = new Set<string>();
  heldSequences: () => number = () => 0;

  publishTo(_subject: unknown, to: string, payload: InferenceEvent & { seq: number }): void {
    const list = this.events.get(to) ?? [];
    list.push(payload);
    this.events.set(to, list);
    this.heldAtEvent.push(this.heldSequences());
  }

  answerProbes(_subject: unknown, { suffix }: { suffix: string }): { unsubscribe(): void } {
    this.answering.add(suffix);
    return { unsubscribe: () => this.answering.delete(suffix) };
  }

  of(id: string): (InferenceEvent & { seq: number })[] {
    return this.events.get(`reply.${id}`) ?? [];
  }

  types(id: string): string[] {
    return this.of(id).map((e) => e.type);
  }

  /** Resolves once completion `id` has published an event of `type`; rejects if it never does. */
  when(id: string, type: InferenceEvent['type']): Promise<void> {
    return until(() => this.types(id).includes(type), `${id}: ${type}`);
  }
}

/** Hands out the tiny model; `next` replaces the next load with one the test settles. */
class FakeModels {
  acquired = 0;
  released = 0;
  next: Promise<LoadedModel> | null = null;

  constructor(private readonly lm: LoadedModel) {}

  acquire(): Promise<LoadedModel> {
    this.acquired++;
    const load = this.next ?? Promise.resolve(this.lm);
    this.next = null;
    return load;
  }

  release(): void {
    this.released++;
  }

  onUnload(): void {
    // The tiny model is never unloaded during a test.
  }
}

function params(extra: Partial<ChatCompletionParams> = {}): ChatCompletionParams {
  return chatCompletionParams({
    messages: [{ role: 'user', content: 'Say something.' }],
    temperature: 0,
    max_tokens: 4,
    seed: 1,
    // Every token then makes a delta event, so a test can wait for the first one.
    logprobs: true,
    ...extra,
  });
}

function item(id: string, extra: Partial<ChatCompletionParams> = {}): InferenceWorkItem {
  return { completion_id: id, reply_subject: `reply.${id}`, base_model: 'tiny', base_model_dir: 'tiny', adapter: null, params: params(extra), deadline: Date.now() + 60_000 };
}

function sampleItem(id: string, prompt: number[], extra: Partial<TokenSampleWorkItem> = {}, sampling: Partial<TokenSamplingParams> = {}): TokenSampleWorkItem {
  return {
    kind: 'sample_tokens',
    completion_id: id,
    reply_subject: `reply.${id}`,
    base_model: 'tiny',
    base_model_dir: 'tiny',
    adapter: null,
    deadline: Date.now() + 60_000,
    model: 'tiny',
    prompt_tokens: prompt,
    num_samples: 1,
    sampling_params: { max_tokens: 6, temperature: 1, top_k: -1, top_p: 1, stop: [], seed: 5, ...sampling },
    prompt_logprobs: false,
    topk_prompt_logprobs: 0,
    ...extra,
  };
}

/** Lets queued callbacks, the decode loop's turns included, run until `done()` holds. */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (done()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never happened: ${what}`);
}

/** Lets pending callbacks run, so that a promise that could settle now has. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('InferenceScheduler', () => {
  let root: string;
  let lm: LoadedModel;
  let bus: FakeBus;
  let models: FakeModels;
  let load: WorkerLoad;
  let shutdown: GracefulShutdown;
  let scheduler: InferenceScheduler;

  beforeAll(async () => {
    await selectBackend('cpu');
    root = mkdtempSync(join(tmpdir(), 'inference-scheduler-'));
    const { dir } = makeModel({ preset: 'tiny', out: join(root, 'tiny'), overrides: { maxPositionEmbeddings: 256 } });
    lm = await loadModel(dir, { inferenceOnly: true });
  });

  afterAll(() => {
    lm.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  function start(overrides: Partial<InferenceWorkerConfig> = {}, model = lm): InferenceScheduler {
    const config = Object.assign(new InferenceWorkerConfig(), { MAX_BATCH_SEQUENCES: 4, PROMPT_CACHE_MB: 0 }, overrides);
    bus = new FakeBus();
    models = new FakeModels(model);
    load = new WorkerLoad();
    shutdown = new GracefulShutdown({ register: () => undefined } as unknown as ReadinessService);
    const adapters = { acquire: () => Promise.reject(new Error('no adapters here')), release: () => undefined } as unknown as AdapterCache;
    scheduler = new InferenceScheduler(config, bus as unknown as MessageBus, models as unknown as ModelCache, adapters, load, shutdown);
    bus.heldSequences = () => scheduler.heldSequences;
    return scheduler;
  }

  afterEach(() => scheduler.onModuleDestroy());

  /** What a completion that ended holds no more: slots, the worker's load, its shutdown hold, its liveness answer, its model. */
  function expectAllReleased(): void {
    expect(scheduler.heldSequences).toBe(0);
    expect(load.active).toBe(0);
    expect(shutdown.held).toBe(0);
    expect(bus.answering.size).toBe(0);
    expect(models.released).toBe(models.acquired);
  }

  describe('a completion', () => {
    it('streams accepted, prompt, one delta per token, finish and done, numbered in order, then lets go of everything', async () => {
      start();
      await scheduler.admit(item('a', { max_tokens: 3 }));
      await bus.when('a', 'done');
      const events = bus.of('a');
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
      expect(events[0].type).toBe('accepted');
      expect(events[1].type).toBe('prompt');
      const finish = events.find((e) => e.type === 'finish');
      expect(finish).toMatchObject({ index: 0, finish_reason: 'length' });
      expect(events.at(-1)).toMatchObject({ type: 'done', usage: { completion_tokens: 3 } });
      await until(() => scheduler.heldSequences === 0, 'the completion retired');
      expectAllReleased();
    });

    it('finishes a json_schema document the grammar closed on the last token of max_tokens with stop, not length', async () => {
      start();
      const schema = { type: 'object', properties: { destination: { type: 'string' }, days: { type: 'integer' } }, required: ['destination', 'days'], additionalProperties: false };
      // Two tokens past the smallest document: the grammar must close most choices on the budget's last token.
      const maxTokens = lm.tokenizer.encode('{"destination": "", "days": 0}').length + 2;
      const response_format = { type: 'json_schema' as const, json_schema: { name: 'trip', schema, strict: true } };
      await scheduler.admit(item('j', { n: 4, max_tokens: maxTokens, temperature: 1, seed: 3, response_format }));
      await bus.when('j', 'done');
      const finishes = bus.of('j').filter((e) => e.type === 'finish') as (InferenceEvent & { type: 'finish' })[];
      expect(finishes).toHaveLength(4);
      for (const finish of finishes) {
        expect(Object.keys(JSON.parse(finish.content ?? ''))).toEqual(['destination', 'days']);
        expect(finish.finish_reason).toBe('stop');
      }
      const eos = new Set(lm.eosTokenIds);
      expect(finishes.some((f) => f.completion_token_ids.length === maxTokens && !eos.has(f.completion_token_ids[maxTokens - 1]))).toBe(true);
    });

    it('decodes each of n choices to its own finish', async () => {
      start();
      await scheduler.admit(item('n', { n: 3, max_tokens: 2 }));
      await bus.when('n', 'done');
      const finishes = bus.of('n').filter((e) => e.type === 'finish');
      expect(finishes.map((e) => (e as { index: number }).index).sort()).toEqual([0, 1, 2]);
      expect(bus.of('n').at(-1)).toMatchObject({ type: 'done', usage: { completion_tokens: 6 } });
    });

    it('answers its liveness probes from acceptance until it ends', async () => {
      start();
      const weights = deferred<LoadedModel>();
      models.next = weights.promise;
      const admitted = scheduler.admit(item('live', { max_tokens: 2 }));
      expect(bus.answering.has('live')).toBe(true);
      expect(bus.types('live')).toEqual(['accepted']);
      weights.resolve(lm);
      await admitted;
      await bus.when('live', 'done');
      await until(() => bus.answering.size === 0, 'liveness released');
      expectAllReleased();
    });

    it('runs a redelivered completion only once while this worker still holds it', async () => {
      start();
      const weights = deferred<LoadedModel>();
      models.next = weights.promise;
      const first = scheduler.admit(item('twice', { max_tokens: 2 }));
      await scheduler.admit(item('twice', { max_tokens: 2 }));
      expect(scheduler.heldSequences).toBe(1);
      weights.resolve(lm);
      await first;
      await bus.when('twice', 'done');
      expect(bus.types('twice').filter((t) => t === 'accepted')).toHaveLength(1);
      expect(models.acquired).toBe(1);
    });
  });

  describe("a reasoning model's completion (Qwen3's template and markers)", () => {
    let qwen3: LoadedModel;
    type Finish = InferenceEvent & { type: 'finish' };
    const finishOf = (id: string) => bus.of(id).find((e) => e.type === 'finish') as Finish;
    const reasoningDeltas = (id: string) => bus.of(id).filter((e) => e.type === 'delta' && e.reasoning);

    beforeAll(async () => {
      const { dir } = makeModel({ preset: 'tiny-qwen3', out: join(root, 'tiny-qwen3'), overrides: { maxPositionEmbeddings: 1024 } });
      qwen3 = await loadModel(dir, { inferenceOnly: true });
    });

    afterAll(() => qwen3.dispose());

    it('reasons first by default, then answers JSON mode with a document that parses, closing the reasoning in time', async () => {
      start({}, qwen3);
      const { closeId } = qwen3.prompt.reasoning as { closeId: number };
      await scheduler.admit(item('r', { max_tokens: 24, temperature: 1, seed: 5, response_format: { type: 'json_object' } }));
      await bus.when('r', 'done');
      const finish = finishOf('r');
      // The random model never closes its reasoning itself: the gate forces </think> while the smallest document still fits.
      expect(typeof finish.reasoning_content).toBe('string');
      expect(finish.reasoning_content).toBe(reasoningDeltas('r').map((e) => (e as { reasoning: string }).reasoning).join(''));
      expect(typeof JSON.parse(finish.content ?? '')).toBe('object');
      const ids = finish.completion_token_ids;
      expect(ids.filter((id) => id === closeId)).toHaveLength(1);
      // Every generated token, the reasoning's and the marker included, is reported with its logprob.
      const tokens = bus.of('r').flatMap((e) => (e.type === 'delta' ? e.tokens : []));
      expect(tokens.map((t) => t.id)).toEqual(ids);
      // No answer text before the reasoning ended.
      const kinds = bus.of('r').flatMap((e) => (e.type !== 'delta' ? [] : e.reasoning ? ['reasoning'] : e.text ? ['text'] : []));
      expect(kinds.indexOf('text')).toBeGreaterThan(kinds.lastIndexOf('reasoning'));
    });

    it('calls a required tool after its reasoning, with arguments the schema allows', async () => {
      start({}, qwen3);
      const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } } }];
      await scheduler.admit(item('t', { max_tokens: 40, temperature: 1, seed: 2, tools, tool_choice: 'required' }));
      await bus.when('t', 'done');
      const finish = finishOf('t');
      expect(finish.finish_reason).toBe('tool_calls');
      expect(typeof finish.reasoning_content).toBe('string');
      expect(finish.tool_calls).toHaveLength(1);
      expect(Object.keys(JSON.parse(finish.tool_calls?.[0].function.arguments ?? ''))).toEqual(['city']);
    });

    it('answers at once with enable_thinking false: the prompt closes an empty reasoning block, the reply has none', async () => {
      start({}, qwen3);
      const { openId, closeId } = qwen3.prompt.reasoning as { openId: number; closeId: number };
      await scheduler.admit(item('n', { max_tokens: 6, return_token_ids: true, chat_template_kwargs: { enable_thinking: false } }));
      await bus.when('n', 'done');
      const prompt = bus.of('n').find((e) => e.type === 'prompt') as InferenceEvent & { type: 'prompt' };
      const markers = prompt.prompt_token_ids.filter((id) => id === openId || id === closeId);
      expect(markers).toEqual([openId, closeId]);
      expect(finishOf('n').reasoning_content).toBeUndefined();
      expect(reasoningDeltas('n')).toHaveLength(0);
    });
  });

  describe('admission', () => {
    it("counts a completion's n sequences as held from the moment it is taken, while its weights load", async () => {
      start({ MAX_BATCH_SEQUENCES: 4 });
      const changes: number[] = [];
      scheduler.onHeldChange(() => changes.push(scheduler.heldSequences));
      const weights = deferred<LoadedModel>();
      models.next = weights.promise;
      const admitted = scheduler.admit(item('w', { n: 3, max_tokens: 2 }));
      expect(scheduler.heldSequences).toBe(3);
      expect(scheduler.freeSlots).toBe(1);
      expect(load.active).toBe(3);
      expect(changes).toEqual([3]);
      weights.resolve(lm);
      await admitted;
      await bus.when('w', 'done');
      await until(() => scheduler.heldSequences === 0, 'retired');
      expect(changes.at(-1)).toBe(0);
      expectAllReleased();
    });

    it('counts each sequence once, never as both admitting and decoding', async () => {
      start({ MAX_BATCH_SEQUENCES: 8 });
      await scheduler.admit(item('once', { n: 2, max_tokens: 3 }));
      await bus.when('once', 'done');
      // Every event went out while the completion's two sequences were held, and no more.
      expect(Math.max(...bus.heldAtEvent)).toBe(2);
      expect(load.slots).toBe(8);
      await until(() => scheduler.heldSequences === 0, 'retired');
      expectAllReleased();
    });

    it('frees the slots of a completion whose weights cannot be loaded, and tells its client', async () => {
      start();
      models.next = Promise.reject(new Error('disk gone'));
      await scheduler.admit(item('broken', { n: 2 }));
      expect(bus.types('broken')).toEqual(['accepted', 'error']);
      expect(bus.of('broken')[1]).toMatchObject({ error: { code: ErrorCode.Unavailable } });
      expectAllReleased();
    });

    it('refuses a model directory the engine cannot load with invalid_request and the reason, not "try again later"', async () => {
      start();
      models.next = Promise.reject(new ModelLoadError('unsupported architecture ["Gemma3ForConditionalGeneration"]; supported: LlamaForCausalLM', '/models/google/gemma-3-4b-it/config.json'));
      await scheduler.admit(item('gemma', { n: 2 }));
      expect(bus.types('gemma')).toEqual(['accepted', 'error']);
      const { error } = bus.of('gemma')[1] as { error: { code: string; message: string; details: { param?: string } } };
      expect(error).toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'model' } });
      expect(error.message).toContain('cannot be served by this engine: unsupported architecture ["Gemma3ForConditionalGeneration"]');
      // The worker's paths stay in its log.
      expect(error.message).not.toContain('/models/');
      expectAllReleased();
    });

    it('refuses a prompt the context window cannot hold with context_length_exceeded', async () => {
      start();
      await scheduler.admit(item('long', { messages: [{ role: 'user', content: 'word '.repeat(400) }] }));
      expect(bus.types('long')).toEqual(['accepted', 'error']);
      expect(bus.of('long')[1]).toMatchObject({ error: { code: ErrorCode.ContextLengthExceeded } });
      expectAllReleased();
    });

    it('holds whenSlotFree while every slot is taken and resolves it once one frees', async () => {
      start({ MAX_BATCH_SEQUENCES: 2 });
      const weights = deferred<LoadedModel>();
      models.next = weights.promise;
      const admitted = scheduler.admit(item('full', { n: 2, max_tokens: 2 }));
      let free = false;
      void scheduler.whenSlotFree().then(() => (free = true));
      await settle();
      expect(free).toBe(false);
      weights.resolve(lm);
      await admitted;
      await bus.when('full', 'done');
      await until(() => free, 'a slot freed');
      expect(scheduler.freeSlots).toBe(2);
    });

    it('releases whoever waits for a slot when the worker stops admitting', async () => {
      start({ MAX_BATCH_SEQUENCES: 1 });
      const weights = deferred<LoadedModel>();
      models.next = weights.promise;
      const admitted = scheduler.admit(item('busy'));
      let free = false;
      void scheduler.whenSlotFree().then(() => (free = true));
      await settle();
      expect(free).toBe(false);
      scheduler.stopAdmitting();
      await settle();
      expect(free).toBe(true);
      weights.resolve(lm);
      await admitted;
    });
  });

  describe('cancellation', () => {
    it('never starts a completion cancelled while it was still queued', async () => {
      start();
      scheduler.cancel('early');
      await scheduler.admit(item('early'));
      expect(bus.types('early')).toEqual([]);
      expect(models.acquired).toBe(0);
      expectAllReleased();
    });

    it('drops a completion cancelled while its weights load, before it prefills', async () => {
      start();
      const weights = deferred<LoadedModel>();
      models.next = weights.promise;
      const admitted = scheduler.admit(item('loading', { max_tokens: 50 }));
      scheduler.cancel('loading');
      weights.resolve(lm);
      await admitted;
      await settle();
      expect(bus.types('loading')).toEqual(['accepted']);
      expectAllReleased();
    });

    it('stops a running completion at the next step, and the others in its batch go on', async () => {
      start();
      await scheduler.admit(item('stay', { max_tokens: 8 }));
      await scheduler.admit(item('gone', { max_tokens: 200 }));
      await bus.when('gone', 'delta');
      scheduler.cancel('gone');
      await bus.when('stay', 'done');
      await until(() => scheduler.heldSequences === 0, 'both retired');
      expect(bus.types('gone')).not.toContain('finish');
      expect(bus.types('gone')).not.toContain('done');
      expect(bus.of('gone').filter((e) => e.type === 'delta').length).toBeLessThan(200);
      expect(bus.of('stay').at(-1)).toMatchObject({ type: 'done', usage: { completion_tokens: 8 } });
      expectAllReleased();
    });
  });

  describe('a token sampling', () => {
    const prompt = [3, 17, 42, 99, 7, 250, 11];
    const resultOf = (id: string) => (bus.of(id).find((e) => (e.type as string) === 'result') as unknown as { result: SampleTokensResult }).result;

    it("samples num_samples sequences in one batch, each token's logprob the model's own log-softmax at temperature 1, then lets go of everything", async () => {
      start();
      await scheduler.admit(sampleItem('s', prompt, { num_samples: 3, prompt_logprobs: true, topk_prompt_logprobs: 2 }));
      await bus.when('s', 'result' as InferenceEvent['type']);
      expect(bus.types('s')).toEqual(['accepted', 'result']);
      const result = resultOf('s');
      expect(result.sequences).toHaveLength(3);
      const eos = new Set(lm.eosTokenIds);
      for (const sequence of result.sequences) {
        expect(sequence.logprobs).toHaveLength(sequence.tokens.length);
        const last = sequence.tokens[sequence.tokens.length - 1];
        expect(sequence.stop_reason).toBe(eos.has(last) ? 'stop' : 'length');
        if (sequence.stop_reason === 'length') expect(sequence.tokens).toHaveLength(6);
        const own = await sequenceLogprobs(lm.model, [...prompt, ...sequence.tokens]);
        const sampled = [...own.slice(prompt.length - 1)];
        sequence.logprobs.forEach((logprob, i) => expect(Math.abs(logprob - sampled[i])).toBeLessThan(1e-4));
      }
      // Seeds seed, seed + 1, seed + 2: the samples differ.
      expect(new Set(result.sequences.map((s) => s.tokens.join(','))).size).toBeGreaterThan(1);
      const own = await sequenceLogprobs(lm.model, prompt);
      expect(result.prompt_logprobs?.[0]).toBeNull();
      (result.prompt_logprobs ?? []).slice(1).forEach((logprob, i) => expect(Math.abs((logprob as number) - own[i])).toBeLessThan(1e-4));
      expect(result.topk_prompt_logprobs).toHaveLength(prompt.length);
      expect(result.topk_prompt_logprobs?.[0]).toBeNull();
      for (const [t, row] of (result.topk_prompt_logprobs ?? []).entries()) {
        if (t === 0) continue;
        expect(row).toHaveLength(2);
        const [[, best], [, second]] = row as [number, number][];
        expect(best).toBeGreaterThanOrEqual(second);
        expect(best).toBeGreaterThanOrEqual((result.prompt_logprobs?.[t] as number) - 1e-6);
      }
      await until(() => scheduler.heldSequences === 0, 'the sampling retired');
      expectAllReleased();
    });

    it('gives the same samples for the same seed, stops on a stop token it includes, and reports the tempered logprob', async () => {
      start();
      await scheduler.admit(sampleItem('a', prompt, { num_samples: 2 }, { max_tokens: 12 }));
      await scheduler.admit(sampleItem('b', prompt, { num_samples: 2 }, { max_tokens: 12 }));
      await bus.when('a', 'result' as InferenceEvent['type']);
      await bus.when('b', 'result' as InferenceEvent['type']);
      expect(resultOf('b').sequences).toEqual(resultOf('a').sequences);
      // Stop on the second token the first sample drew: it ends there, with it.
      const stopAt = resultOf('a').sequences[0].tokens[1];
      await scheduler.admit(sampleItem('c', prompt, {}, { max_tokens: 12, stop: [stopAt] }));
      await bus.when('c', 'result' as InferenceEvent['type']);
      const stopped = resultOf('c').sequences[0];
      expect(stopped.stop_reason).toBe('stop');
      expect(stopped.tokens[stopped.tokens.length - 1]).toBe(stopAt);
      expect(stopped.tokens.length).toBeLessThanOrEqual(2);
      // At temperature 0.5 the first token's logprob is log_softmax(logits / 0.5) there: the distribution it was drawn from.
      await scheduler.admit(sampleItem('t', prompt, {}, { max_tokens: 1, temperature: 0.5 }));
      await bus.when('t', 'result' as InferenceEvent['type']);
      const tempered = resultOf('t').sequences[0];
      const logits = lm.model.forward([prompt], { lastOnly: true });
      const row = (await logits.data()) as Float32Array;
      logits.dispose();
      const scaled = [...row].map((x) => x / 0.5);
      const max = Math.max(...scaled);
      const lse = max + Math.log(scaled.reduce((sum, x) => sum + Math.exp(x - max), 0));
      expect(Math.abs(tempered.logprobs[0] - (scaled[tempered.tokens[0]] - lse))).toBeLessThan(1e-3);
    });

    it('refuses token ids outside the vocabulary and a prompt that fills the context window, naming the prompt', async () => {
      start();
      await scheduler.admit(sampleItem('v', [1, lm.config.vocabSize]));
      await scheduler.admit(sampleItem('w', Array.from({ length: lm.prompt.contextWindow }, () => 5)));
      await bus.when('v', 'error');
      await bus.when('w', 'error');
      expect(bus.of('v').at(-1)).toMatchObject({ type: 'error', error: { code: ErrorCode.InvalidRequest, details: { param: 'prompt' } } });
      expect(bus.of('w').at(-1)).toMatchObject({ type: 'error', error: { code: ErrorCode.ContextLengthExceeded, details: { param: 'prompt' } } });
      expectAllReleased();
    });
  });

  describe('shutdown', () => {
    it('lets running completions finish while the drain lasts', async () => {
      start();
      await scheduler.admit(item('draining', { max_tokens: 6 }));
      shutdown.begin();
      scheduler.stopAdmitting();
      expect(shutdown.held).toBe(1);
      expect(await shutdown.idle(60_000)).toBe(true);
      expect(bus.of('draining').at(-1)).toMatchObject({ type: 'done' });
      expectAllReleased();
    });

    it('fails what still runs once the drain time is over, with an error that says to retry', async () => {
      start();
      await scheduler.admit(item('cut', { max_tokens: 200 }));
      await bus.when('cut', 'delta');
      shutdown.begin();
      shutdown.giveUp();
      await bus.when('cut', 'error');
      expect(bus.of('cut').at(-1)).toMatchObject({ type: 'error', error: { code: ErrorCode.Unavailable } });
      expect(bus.types('cut')).not.toContain('done');
      await until(() => scheduler.heldSequences === 0, 'failed and retired');
      expectAllReleased();
    });
  });

  describe('on webgpu', () => {
    const prompt = [3, 17, 42, 99, 7, 250, 11];
    const sequencesOf = (id: string) => (bus.of(id).find((e) => (e.type as string) === 'result') as unknown as { result: SampleTokensResult }).result.sequences;
    /** The tiny model (its embeddings untied, as the service's default model's are), on webgpu; null where there is none here. */
    let gpuModel: LoadedModel | null = null;

    beforeAll(async () => {
      const backend = await selectBackend('webgpu');
      if (backend.name !== 'webgpu') {
        // CI has lavapipe; elsewhere a machine without a WebGPU adapter cannot run these.
        if (process.env['CI'] === 'true') throw new Error(`no webgpu backend in CI: got ${backend.name}`);
        return;
      }
      const { dir } = makeModel({ preset: 'tiny', out: join(root, 'webgpu'), overrides: { maxPositionEmbeddings: 256 } });
      gpuModel = await loadModel(dir, { inferenceOnly: true });
    });

    afterAll(async () => {
      gpuModel?.dispose();
      await selectBackend('cpu');
    });

    it('decodes runs of DECODE_RUN_STEPS steps fed on the GPU: the same seeded samples as a step at a time, each ending at its stop or its max_tokens', async () => {
      if (!gpuModel) return;
      const model = gpuModel;
      const samples = async (runSteps: number, id: string, sampling: Partial<TokenSamplingParams>, ahead = true) => {
        start({ DECODE_RUN_STEPS: runSteps, DECODE_RUN_AHEAD: ahead }, model);
        await scheduler.admit(sampleItem(id, prompt, { num_samples: 3 }, sampling));
        await bus.when(id, 'result' as InferenceEvent['type']);
        await until(() => scheduler.heldSequences === 0, `${id} retired`);
        expectAllReleased();
        const sequences = sequencesOf(id);
        scheduler.onModuleDestroy();
        return sequences;
      };
      const probe = new DecodeBatch(model.model);
      expect(probe.feedsOnGpu).toBe(true);
      probe.dispose();
      // Six tokens: the second run of four ends two steps in.
      const single = await samples(1, 'one', { max_tokens: 6 });
      const runs = await samples(4, 'runs', { max_tokens: 6 });
      expect(runs).toEqual(single);
      for (const sequence of runs) if (sequence.stop_reason === 'length') expect(sequence.tokens).toHaveLength(6);
      // A stop on the second token the first sample drew: it ends there, within the first run, and the run's later tokens are dropped.
      const stopAt = single[0].tokens[1];
      const stopped = await samples(4, 'stop', { max_tokens: 6, stop: [stopAt] });
      expect(stopped[0].stop_reason).toBe('stop');
      expect(stopped[0].tokens).toEqual(single[0].tokens.slice(0, 2));
    }, 120_000);

    it('submits the next run before the last is read back (DECODE_RUN_AHEAD): the same seeded samples, a stop within a run dropping what ran on after it', async () => {
      if (!gpuModel) return;
      const model = gpuModel;
      const samples = async (id: string, sampling: Partial<TokenSamplingParams>, overrides: Partial<InferenceWorkerConfig>) => {
        start(overrides, model);
        await scheduler.admit(sampleItem(id, prompt, { num_samples: 3 }, sampling));
        await bus.when(id, 'result' as InferenceEvent['type']);
        await until(() => scheduler.heldSequences === 0, `${id} retired`);
        expectAllReleased();
        const sequences = sequencesOf(id);
        scheduler.onModuleDestroy();
        return sequences;
      };
      const after = jest.spyOn(DecodeBatch.prototype, 'stepsDrawnAfter');
      try {
        const single = await samples('one', { max_tokens: 14 }, { DECODE_RUN_STEPS: 1 });
        const runs = await samples('runs', { max_tokens: 14 }, { DECODE_RUN_STEPS: 4, DECODE_RUN_AHEAD: false });
        expect(after).not.toHaveBeenCalled();
        const ahead = await samples('ahead', { max_tokens: 14 }, { DECODE_RUN_STEPS: 4, DECODE_RUN_AHEAD: true });
        expect(after).toHaveBeenCalled();
        expect(runs).toEqual(single);
        expect(ahead).toEqual(single);
        for (const sequence of ahead) if (sequence.stop_reason === 'length') expect(sequence.tokens).toHaveLength(14);
        // A stop on the second sample's 7th token, within the second run, while a third may already be on the GPU.
        const stopAt = single[1].tokens[6];
        const end = single[1].tokens.indexOf(stopAt) + 1;
        const stopped = await samples('ahead-stop', { max_tokens: 14, stop: [stopAt] }, { DECODE_RUN_STEPS: 4, DECODE_RUN_AHEAD: true });
        expect(stopped[1].stop_reason).toBe('stop');
        expect(stopped[1].tokens).toEqual(single[1].tokens.slice(0, end));
      } finally {
        after.mockRestore();
      }
    }, 120_000);

    it("decodes a JSON-mode completion beside device-drawn samplings, from its own logits: every token's logprob the model's own", async () => {
      if (!gpuModel) return;
      const model = gpuModel;
      start({ DECODE_RUN_STEPS: 4 }, model);
      const admitted = [
        scheduler.admit(sampleItem('s', prompt, { num_samples: 2 }, { max_tokens: 12 })),
        scheduler.admit(item('j', { max_tokens: 12, temperature: 1, seed: 3, response_format: { type: 'json_object' }, return_token_ids: true })),
      ];
      await Promise.all(admitted);
      await bus.when('s', 'result' as InferenceEvent['type']);
      await bus.when('j', 'done');
      await until(() => scheduler.heldSequences === 0, 'both retired');
      expectAllReleased();
      // The model's own log-softmax (temperature 1) at each drawn token, from a forward pass over the whole sequence.
      const expectOwnLogprobs = async (promptIds: number[], tokens: number[], logprobs: number[]) => {
        const own = await sequenceLogprobs(model.model, [...promptIds, ...tokens]);
        logprobs.forEach((logprob, i) => expect(Math.abs(logprob - own[promptIds.length - 1 + i])).toBeLessThan(1e-4));
      };
      for (const sequence of sequencesOf('s')) await expectOwnLogprobs(prompt, sequence.tokens, sequence.logprobs);
      const promptEvent = bus.of('j').find((e) => e.type === 'prompt') as InferenceEvent & { type: 'prompt' };
      const finish = bus.of('j').find((e) => e.type === 'finish') as InferenceEvent & { type: 'finish' };
      const tokens = bus.of('j').flatMap((e) => (e.type === 'delta' ? e.tokens : []));
      expect(() => JSON.parse(finish.content ?? '')).not.toThrow();
      expect(tokens.map((t) => t.id)).toEqual(finish.completion_token_ids);
      await expectOwnLogprobs(promptEvent.prompt_token_ids, finish.completion_token_ids, tokens.map((t) => t.logprob));
    }, 120_000);
  });
});
