import {
  ErrorCode,
  ResolveModelReply,
  SampleTokensRequest,
  SampleTokensResult,
  ServiceError,
  TOKEN_SAMPLE_EVENTS_PREFIX,
  TokenSampleEvent,
  TokenSampleWorkItem,
  WorkQueues,
} from '@trainyard/contracts';
import type { ModelLimits } from '@trainyard/engine/wire';
import { MessageBus } from '@trainyard/messaging';
import { InferenceCapacity } from '../completions/inference-capacity';
import { ModelResolutions } from '../completions/model-resolutions';
import { WorkerSignals } from '../completions/worker-signals';
import { ChatConfig } from '../config/chat.config';
import { ModelLimitsCache } from './model-limits';
import { TokenSamplingService } from './token-sampling.service';

const CHECKPOINT: ResolveModelReply = { base_model: 'tiny', base_model_dir: '/models/tiny', base_model_bundle: null, model_id: 'm-1', step: 3, adapter_bundle: '/artifacts/m-1/step3', adapter_sha256: 'abc' };
const RESULT: SampleTokensResult = {
  sequences: [{ tokens: [5, 6], logprobs: [-1.5, -0.25], stop_reason: 'length' }],
  prompt_logprobs: null,
  topk_prompt_logprobs: null,
  prompt_cache_hit_tokens: 0,
};

function request(extra: Partial<SampleTokensRequest> = {}): SampleTokensRequest {
  return {
    request_id: 'r-1',
    entity_id: 'e-1',
    entity_name: 'acme',
    model: 'acme/project/agent:step3',
    prompt_tokens: [1, 2, 3],
    num_samples: 1,
    sampling_params: { max_tokens: 2, temperature: 1, top_k: -1, top_p: 1, stop: [], seed: 4 },
    prompt_logprobs: false,
    topk_prompt_logprobs: 0,
    ...extra,
  };
}

/** What the service does to the world, recorded; `send` plays the worker on the queued item's reply subject. */
class World {
  readonly taken: string[] = [];
  readonly admitted = new Set<string>();
  readonly queued: TokenSampleWorkItem[] = [];
  readonly cancelled: string[] = [];
  private readonly listeners = new Map<string, (event: TokenSampleEvent) => void>();
  limits: ModelLimits | null = { vocabSize: 512, contextWindow: 2048 };
  queueError: Error | null = null;
  alive: boolean | null = true;
  /** Played by the worker as soon as the item is queued. */
  onQueued: (item: TokenSampleWorkItem) => void = (item) => {
    this.send(item, { type: 'accepted' });
    this.send(item, { type: 'result', result: RESULT });
  };

  readonly bus = {
    subscribe: (_subject: unknown, handler: (event: TokenSampleEvent) => void, options: { suffix: string }) => {
      const subject = `${TOKEN_SAMPLE_EVENTS_PREFIX}.${options.suffix}`;
      this.listeners.set(subject, handler);
      return { unsubscribe: () => this.listeners.delete(subject) };
    },
    enqueue: async (queue: unknown, item: TokenSampleWorkItem, options: { id: string }) => {
      this.taken.push('enqueue');
      expect(queue).toBe(WorkQueues.inference);
      expect(options.id).toBe(item.completion_id);
      if (this.queueError) throw this.queueError;
      this.queued.push(item);
      this.onQueued(item);
    },
  } as unknown as MessageBus;

  readonly resolutions = {
    resolve: async (req: { model: string }) => {
      this.taken.push('resolve');
      if (req.model.includes('missing')) throw new ServiceError(ErrorCode.ModelNotFound, 'no such model', { param: 'model' });
      return CHECKPOINT;
    },
  } as unknown as ModelResolutions;

  readonly capacity = {
    admit: async (id: string) => {
      this.taken.push('admit');
      this.admitted.add(id);
    },
    release: (id: string) => this.admitted.delete(id),
  } as unknown as InferenceCapacity;

  readonly models = { of: () => this.limits } as unknown as ModelLimitsCache;

  readonly workers = {
    cancel: (id: string) => this.cancelled.push(id),
    alive: async () => this.alive,
  } as unknown as WorkerSignals;

  send(item: TokenSampleWorkItem, event: TokenSampleEvent): void {
    this.listeners.get(item.reply_subject)?.(event);
  }

  get listening(): number {
    return this.listeners.size;
  }
}

async function refusal(run: Promise<unknown>): Promise<ServiceError> {
  try {
    await run;
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('TokenSamplingService', () => {
  let world: World;
  let service: TokenSamplingService;

  beforeEach(() => {
    world = new World();
    const config = Object.assign(new ChatConfig(), { COMPLETION_DEADLINE_MS: 30_000 });
    service = new TokenSamplingService(config, world.bus, world.resolutions, world.capacity, world.models, world.workers);
  });

  afterEach(() => jest.useRealTimers());

  it("queues the checkpoint's sampling for a worker and answers with its result and the weights that served it, then lets go", async () => {
    const reply = await service.sample(request());
    expect(reply).toEqual({ ...RESULT, model: 'acme/project/agent:step3', base_model: 'tiny', checkpoint_step: 3, model_id: 'm-1' });
    expect(world.taken).toEqual(['resolve', 'admit', 'enqueue']);
    const [item] = world.queued;
    expect(item).toMatchObject({
      kind: 'sample_tokens',
      base_model_dir: '/models/tiny',
      adapter: { bundle: '/artifacts/m-1/step3', sha256: 'abc', step: 3, model_id: 'm-1' },
      prompt_tokens: [1, 2, 3],
      num_samples: 1,
      sampling_params: { max_tokens: 2, seed: 4 },
    });
    expect(item.reply_subject).toBe(`${TOKEN_SAMPLE_EVENTS_PREFIX}.${item.completion_id}`);
    expect(world.admitted.size).toBe(0);
    expect(world.listening).toBe(0);
  });

  it('samples anew under its own id each time, even for a repeated request_id', async () => {
    await service.sample(request());
    await service.sample(request());
    expect(new Set(world.queued.map((item) => item.completion_id)).size).toBe(2);
  });

  it("passes on the worker's coded error, and lets go", async () => {
    world.onQueued = (item) => world.send(item, { type: 'error', error: { code: ErrorCode.ContextLengthExceeded, message: 'too long', details: { param: 'prompt' } } });
    expect(await refusal(service.sample(request()))).toMatchObject({ code: ErrorCode.ContextLengthExceeded, details: { param: 'prompt' } });
    expect(world.admitted.size).toBe(0);
    expect(world.listening).toBe(0);
  });

  it('refuses before admitting: a bad request, an unknown model, a token outside the vocabulary', async () => {
    expect(await refusal(service.sample(request({ num_samples: 0 })))).toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'num_samples' } });
    expect(await refusal(service.sample(request({ model: 'acme/project/missing' })))).toMatchObject({ code: ErrorCode.ModelNotFound });
    expect(await refusal(service.sample(request({ prompt_tokens: [1, 512] })))).toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'prompt' } });
    expect(world.taken).not.toContain('admit');
  });

  it("leaves a model whose config chat cannot read to the worker's checks, still bounding the result's size", async () => {
    world.limits = null;
    await service.sample(request({ prompt_tokens: [1, 99_999] }));
    expect(world.queued).toHaveLength(1);
    expect(await refusal(service.sample(request({ num_samples: 16, sampling_params: { ...request().sampling_params, max_tokens: 4096 } })))).toMatchObject({
      details: { param: 'num_samples' },
    });
  });

  it('says unavailable when the queue is, and lets go of its admission', async () => {
    world.queueError = new Error('stream gone');
    expect(await refusal(service.sample(request()))).toMatchObject({ code: ErrorCode.Unavailable });
    expect(world.admitted.size).toBe(0);
    expect(world.listening).toBe(0);
  });

  it('times out, and cancels it, when no worker takes it before its deadline', async () => {
    jest.useFakeTimers();
    world.onQueued = () => undefined;
    const outcome = refusal(service.sample(request()));
    await jest.advanceTimersByTimeAsync(30_000);
    expect(await outcome).toMatchObject({ code: ErrorCode.Timeout });
    expect(world.cancelled).toEqual([world.queued[0].completion_id]);
    expect(world.admitted.size).toBe(0);
  });

  it('waits past the deadline for a worker that took it and holds it, and fails once no worker holds it', async () => {
    jest.useFakeTimers();
    world.onQueued = (item) => world.send(item, { type: 'accepted' });
    const outcome = refusal(service.sample(request()));
    await jest.advanceTimersByTimeAsync(60_000);
    expect(world.admitted.size).toBe(1);
    world.alive = false;
    await jest.advanceTimersByTimeAsync(5_000);
    expect(await outcome).toMatchObject({ code: ErrorCode.Unavailable });
    expect(world.cancelled).toEqual([]);
    expect(world.admitted.size).toBe(0);
  });
});
