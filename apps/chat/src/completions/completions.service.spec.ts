import { ChatCompletionParams, ErrorCode, InferenceWorkItem, ResolveModelReply, ServiceError, StartCompletionRequest, WorkQueues } from '@trainyard/contracts';
import { MessageBus } from '@trainyard/messaging';
import { chatCompletionParams } from '@trainyard/testing';
import { ChatConfig } from '../config/chat.config';
import { CompletionsService } from './completions.service';
import { InferenceCapacity } from './inference-capacity';
import { ModelResolutions } from './model-resolutions';
import { PromptValidation } from './prompt-validation';
import { SchemaValidation } from './schema-validation';

const BASE: ResolveModelReply = { base_model: 'tiny', base_model_dir: '/models/tiny', base_model_bundle: null, model_id: null, step: null, adapter_bundle: null, adapter_sha256: null };
const CHECKPOINT: ResolveModelReply = { ...BASE, model_id: 'm-1', step: 7, adapter_bundle: '/artifacts/m-1/step7', adapter_sha256: 'abc' };

function request(extra: Partial<StartCompletionRequest> = {}, params: Partial<ChatCompletionParams> = {}): StartCompletionRequest {
  return {
    completion_id: 'c-1',
    entity_id: 'e-1',
    entity_name: 'acme',
    logprobs_requested: null,
    reply_subject: 'events.gw.c-1',
    params: chatCompletionParams({ model: 'acme/project/agent', ...params }),
    ...extra,
  };
}

/** Records every step the service takes, in order, so a test can see where a refusal stopped it. */
class Steps {
  readonly taken: string[] = [];
  readonly queued: { item: InferenceWorkItem; id: string }[] = [];
  readonly released: string[] = [];
  schemaError: ServiceError | null = null;
  resolution: ResolveModelReply | ServiceError = BASE;
  promptError: ServiceError | null = null;
  capacityError: ServiceError | null = null;
  queueError: Error | null = null;

  readonly schemas = {
    check: async () => {
      this.taken.push('schemas');
      if (this.schemaError) throw this.schemaError;
    },
  } as unknown as SchemaValidation;

  readonly resolutions = {
    resolve: async () => {
      this.taken.push('resolve');
      if (this.resolution instanceof ServiceError) throw this.resolution;
      return this.resolution;
    },
  } as unknown as ModelResolutions;

  readonly prompts = {
    check: () => {
      this.taken.push('prompt');
      if (this.promptError) throw this.promptError;
    },
  } as unknown as PromptValidation;

  readonly capacity = {
    admit: async () => {
      this.taken.push('admit');
      if (this.capacityError) throw this.capacityError;
    },
    release: (id: string) => this.released.push(id),
  } as unknown as InferenceCapacity;

  readonly bus = {
    enqueue: async (queue: unknown, item: InferenceWorkItem, options: { id: string }) => {
      this.taken.push('enqueue');
      expect(queue).toBe(WorkQueues.inference);
      if (this.queueError) throw this.queueError;
      this.queued.push({ item, id: options.id });
    },
  } as unknown as MessageBus;
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

describe('CompletionsService', () => {
  const NOW = 1_800_000_000_000;
  let steps: Steps;
  let service: CompletionsService;

  beforeEach(() => {
    jest.spyOn(Date, 'now').mockReturnValue(NOW);
    steps = new Steps();
    const config = Object.assign(new ChatConfig(), { COMPLETION_DEADLINE_MS: 30_000 });
    service = new CompletionsService(config, steps.bus, steps.resolutions, steps.capacity, steps.schemas, steps.prompts);
  });

  afterEach(() => jest.restoreAllMocks());

  it('validates, resolves, checks the prompt, admits, then queues the completion under its own id', async () => {
    const reply = await service.start(request());
    expect(steps.taken).toEqual(['schemas', 'resolve', 'prompt', 'admit', 'enqueue']);
    expect(steps.queued).toHaveLength(1);
    const { item, id } = steps.queued[0];
    // The completion id as message id: a retried start is queued once.
    expect(id).toBe('c-1');
    expect(item).toMatchObject({ completion_id: 'c-1', reply_subject: 'events.gw.c-1', base_model_dir: '/models/tiny', adapter: null, deadline: NOW + 30_000 });
    expect(reply).toEqual({ model: 'acme/project/agent', base_model: 'tiny', checkpoint_step: null, model_id: null, logprobs: false });
  });

  it('sends a checkpoint its adapter, and reports logprobs and token ids for it by default (RL needs them)', async () => {
    steps.resolution = CHECKPOINT;
    const reply = await service.start(request());
    const { item } = steps.queued[0];
    expect(item.adapter).toEqual({ bundle: '/artifacts/m-1/step7', sha256: 'abc', step: 7, model_id: 'm-1' });
    expect(item.params.logprobs).toBe(true);
    expect(item.params.return_token_ids).toBe(true);
    expect(reply).toMatchObject({ checkpoint_step: 7, model_id: 'm-1', logprobs: true });
  });

  it('follows an explicit logprobs choice either way', async () => {
    steps.resolution = CHECKPOINT;
    await service.start(request({ logprobs_requested: false }));
    expect(steps.queued[0].item.params).toMatchObject({ logprobs: false, return_token_ids: false });
    steps.resolution = BASE;
    await service.start(request({ completion_id: 'c-2', logprobs_requested: true }));
    expect(steps.queued[1].item.params).toMatchObject({ logprobs: true, return_token_ids: true });
  });

  it('has the worker report tokens and logprobs of a stored completion, though its answer does not show them', async () => {
    const reply = await service.start(request({ logprobs_requested: false, record_tokens: true }));
    expect(steps.queued[0].item.params).toMatchObject({ logprobs: true, return_token_ids: true });
    expect(reply.logprobs).toBe(false);
  });

  it('keeps return_token_ids when asked for without logprobs', async () => {
    await service.start(request({}, { return_token_ids: true }));
    expect(steps.queued[0].item.params).toMatchObject({ logprobs: false, return_token_ids: true });
  });

  it.each([
    ['an invalid schema', (s: Steps) => (s.schemaError = ServiceError.invalid('tools[0].function.parameters bad', 'tools[0].function.parameters')), ['schemas']],
    ['an unknown model', (s: Steps) => (s.resolution = new ServiceError(ErrorCode.ModelNotFound, 'no such model')), ['schemas', 'resolve']],
    ['a prompt the window cannot hold', (s: Steps) => (s.promptError = ServiceError.contextLengthExceeded(64, 80, false)), ['schemas', 'resolve', 'prompt']],
  ])('refuses %s before taking a place in the queue', async (_what, arrange, taken) => {
    const expected = arrange(steps);
    const err = await refusal(service.start(request()));
    expect(err.code).toBe(expected instanceof ServiceError ? expected.code : undefined);
    expect(steps.taken).toEqual(taken);
    expect(steps.queued).toEqual([]);
  });

  it('queues nothing when there is no room, and passes the 429 on', async () => {
    steps.capacityError = new ServiceError(ErrorCode.RateLimited, 'busy', { retryAfterSeconds: 2 });
    const err = await refusal(service.start(request()));
    expect(err.code).toBe(ErrorCode.RateLimited);
    expect(steps.queued).toEqual([]);
    expect(steps.released).toEqual([]);
  });

  it('gives the admission back when the queue refuses the completion, and answers 503 with a retry', async () => {
    steps.queueError = new Error('stream not found');
    const err = await refusal(service.start(request()));
    expect(err.code).toBe(ErrorCode.Unavailable);
    expect(err.details.retryAfterSeconds).toBe(1);
    expect(err.message).toContain('stream not found');
    expect(steps.released).toEqual(['c-1']);
  });
});
