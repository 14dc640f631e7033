import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  ErrorCode,
  QUEUE_FAILOVER_MS,
  SampleTokensReply,
  SampleTokensRequest,
  SampleTokensResult,
  ServiceError,
  Subjects,
  TOKEN_SAMPLE_EVENTS_PREFIX,
  TokenSampleEvent,
  TokenSampleWorkItem,
  WorkQueues,
} from '@trainyard/contracts';
import { EventSubscription, MessageBus } from '@trainyard/messaging';
import { ChatConfig } from '../config/chat.config';
import { InferenceCapacity } from '../completions/inference-capacity';
import { ModelResolutions } from '../completions/model-resolutions';
import { WorkerSignals } from '../completions/worker-signals';
import { servedWeights } from '../completions/work-routing';
import { ModelLimitsCache } from './model-limits';
import { checkAgainstModel, checkResultSize, checkSampleTokensRequest, SamplingLimits } from './sample-tokens.validation';

/** How often a sampling that a worker took is asked after, and how long its worker gets to answer. */
const LIVENESS_EVERY_MS = 5_000;
const LIVENESS_TIMEOUT_MS = 2_000;
/** Bytes a result may take: one NATS message (1 MiB by default) less room for the reply's envelope. */
const MAX_RESULT_BYTES = 900 * 1024;

/**
 * Token sampling (Tinker's asample) the way chat completions go: the model resolved for the
 * entity, the request checked (shape and bounds, then token ids and lengths against the model's
 * config), admitted against the inference workers' slots, queued on the inference work queue,
 * and its result gathered from the worker that runs it. The RPC answers with the result, so the
 * caller needs no stream: chat waits for the worker on a subject of its own.
 *
 * Until a worker takes it, the sampling waits at most COMPLETION_DEADLINE_MS (workers drop it
 * after that); once taken, as long as its worker says it holds it. A worker that is gone fails
 * the sampling with unavailable (retry it), never a silent wait.
 */
@Injectable()
export class TokenSamplingService {
  private readonly logger = new Logger(TokenSamplingService.name);
  private readonly limits: SamplingLimits;

  constructor(
    @Inject(ChatConfig) private readonly config: ChatConfig,
    private readonly bus: MessageBus,
    private readonly resolutions: ModelResolutions,
    private readonly capacity: InferenceCapacity,
    private readonly models: ModelLimitsCache,
    private readonly workers: WorkerSignals,
  ) {
    this.limits = {
      maxSamples: config.MAX_TOKEN_SAMPLES,
      maxTokens: config.MAX_SAMPLE_TOKENS,
      maxTopkPromptLogprobs: config.MAX_TOPK_PROMPT_LOGPROBS,
      maxStops: 32,
      maxResultBytes: MAX_RESULT_BYTES,
    };
  }

  async sample(given: SampleTokensRequest): Promise<SampleTokensReply> {
    const request = checkSampleTokensRequest(given, this.limits);
    const resolved = await this.resolutions.resolve({ entity_id: request.entity_id, entity_name: request.entity_name, model: request.model });
    const limits = await this.models.of(resolved);
    if (limits) checkAgainstModel(request, limits, this.limits);
    else checkResultSize(request, request.sampling_params.max_tokens ?? this.limits.maxTokens, this.limits);

    // Every call samples anew under an id of its own (its admission, its work item, its
    // liveness): a caller that retries a request_id whose first call is still running gets its
    // own answer, the same one for a given seed, instead of waiting on the first call's.
    const id = randomUUID();
    await this.capacity.admit(id);
    const waiter = new SamplingWaiter(this.bus, this.workers, id);
    try {
      const item: TokenSampleWorkItem = {
        kind: 'sample_tokens',
        completion_id: id,
        reply_subject: waiter.subject,
        ...servedWeights(resolved),
        deadline: Date.now() + this.config.COMPLETION_DEADLINE_MS,
        model: request.model,
        prompt_tokens: request.prompt_tokens,
        num_samples: request.num_samples,
        sampling_params: request.sampling_params,
        prompt_logprobs: request.prompt_logprobs,
        topk_prompt_logprobs: request.topk_prompt_logprobs,
      };
      try {
        // A publish retried (by the client library, or while the stream fails over) is stored once.
        await this.bus.enqueue(WorkQueues.inference, item, { id, failoverMs: QUEUE_FAILOVER_MS });
      } catch (err) {
        throw new ServiceError(ErrorCode.Unavailable, `The inference queue is unavailable: ${(err as Error).message}`, { retryAfterSeconds: 1 });
      }
      const result = await waiter.result(this.config.COMPLETION_DEADLINE_MS);
      return { ...result, model: request.model, base_model: resolved.base_model, checkpoint_step: resolved.step, model_id: resolved.model_id };
    } catch (err) {
      if (!(err instanceof ServiceError)) this.logger.error(`token sampling ${id} (request ${request.request_id}) failed: ${(err as Error).stack}`);
      throw err instanceof ServiceError ? err : new ServiceError(ErrorCode.Internal, 'Token sampling failed');
    } finally {
      waiter.close();
      this.capacity.release(id);
    }
  }
}

type Outcome = { result: SampleTokensResult } | { error: ServiceError };

/**
 * Listens for one sampling's events on a subject of its own, from before it is queued (so that
 * nothing the worker sends is missed) until it is over.
 */
class SamplingWaiter {
  readonly subject: string;
  private readonly subscription: EventSubscription;
  private accepted = false;
  /** How it ended (the first outcome counts), and who waits for it. */
  private outcome: Outcome | null = null;
  private settle: ((outcome: Outcome) => void) | null = null;
  private deadline?: NodeJS.Timeout;
  private liveness?: NodeJS.Timeout;

  constructor(
    private readonly bus: MessageBus,
    private readonly workers: WorkerSignals,
    private readonly id: string,
  ) {
    this.subject = `${TOKEN_SAMPLE_EVENTS_PREFIX}.${id}`;
    this.subscription = bus.subscribe(Subjects.chat.tokenSampleEvents, (event) => this.on(event), {
      suffix: id,
      onUndecodable: () => this.finish({ error: new ServiceError(ErrorCode.Internal, 'The inference worker sent an unreadable sampling result') }),
    });
  }

  /** The worker's result, or its error; unavailable when its worker is gone, timeout when none took it in time. */
  result(deadlineMs: number): Promise<SampleTokensResult> {
    return new Promise<SampleTokensResult>((resolve, reject) => {
      this.settle = (outcome) => ('result' in outcome ? resolve(outcome.result) : reject(outcome.error));
      if (this.outcome) this.settle(this.outcome);
      this.deadline = setTimeout(() => {
        if (this.accepted) return;
        // Workers drop it unstarted past its deadline; make sure none starts it late.
        this.workers.cancel(this.id);
        this.finish({ error: new ServiceError(ErrorCode.Timeout, `No inference worker took the sampling within ${deadlineMs} ms`, { retryAfterSeconds: 1 }) });
      }, deadlineMs);
      this.liveness = setInterval(() => void this.checkAlive(), LIVENESS_EVERY_MS);
    });
  }

  close(): void {
    clearTimeout(this.deadline);
    clearInterval(this.liveness);
    this.subscription.unsubscribe();
    this.settle = null;
  }

  private on(event: TokenSampleEvent): void {
    if (event?.type === 'accepted') this.accepted = true;
    else if (event?.type === 'result') this.finish({ result: event.result });
    else if (event?.type === 'error') {
      this.finish({ error: ServiceError.fromWire(event.error) ?? new ServiceError(ErrorCode.Internal, 'Token sampling failed on the inference worker') });
    }
  }

  private finish(outcome: Outcome): void {
    if (this.outcome) return;
    this.outcome = outcome;
    this.settle?.(outcome);
  }

  /** A sampling its worker took and no worker holds any more will never be answered. */
  private async checkAlive(): Promise<void> {
    if (!this.accepted || this.outcome) return;
    // finish() ignores it when the result came meanwhile.
    if ((await this.workers.alive(this.id, LIVENESS_TIMEOUT_MS)) === false) {
      this.finish({ error: new ServiceError(ErrorCode.Unavailable, 'The inference worker running the sampling stopped; retry it', { retryAfterSeconds: 1 }) });
    }
  }
}
