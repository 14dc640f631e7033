import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, InferenceWorkItem, QUEUE_FAILOVER_MS, ServiceError, StartCompletionReply, StartCompletionRequest, WorkQueues } from '@trainyard/contracts';
import { MessageBus } from '@trainyard/messaging';
import { ChatConfig } from '../config/chat.config';
import { InferenceCapacity } from './inference-capacity';
import { ModelResolutions } from './model-resolutions';
import { PromptValidation } from './prompt-validation';
import { SchemaValidation } from './schema-validation';
import { servedWeights } from './work-routing';

/**
 * Policy lives here, not on the workers: which weights serve the name (through the
 * registry, per entity, cached until it changes), whether there is room, and what the
 * worker is told to do.
 */
@Injectable()
export class CompletionsService {
  constructor(
    @Inject(ChatConfig) private readonly config: ChatConfig,
    private readonly bus: MessageBus,
    private readonly resolutions: ModelResolutions,
    private readonly capacity: InferenceCapacity,
    private readonly schemas: SchemaValidation,
    private readonly prompts: PromptValidation,
  ) {}

  async start(request: StartCompletionRequest): Promise<StartCompletionReply> {
    await this.schemas.check(request.params);
    const resolved = await this.resolutions.resolve({
      entity_id: request.entity_id,
      entity_name: request.entity_name,
      model: request.params.model,
    });
    await this.prompts.check(resolved, request.params);
    await this.capacity.admit(request.completion_id);

    const trainable = resolved.adapter_bundle !== null;
    // RL needs the sampled tokens and their logprobs, so trainable models report them unless told not to.
    const logprobs = request.logprobs_requested ?? trainable;
    // A stored completion keeps them for training even when its answer does not show them.
    const reported = logprobs || request.record_tokens === true;
    const item: InferenceWorkItem = {
      completion_id: request.completion_id,
      reply_subject: request.reply_subject,
      ...servedWeights(resolved),
      params: { ...request.params, logprobs: reported, return_token_ids: request.params.return_token_ids || reported },
      deadline: Date.now() + this.config.COMPLETION_DEADLINE_MS,
    };
    // The completion id as message id: a retried start inside the dedupe window is queued once.
    try {
      await this.bus.enqueue(WorkQueues.inference, item, { id: request.completion_id, failoverMs: QUEUE_FAILOVER_MS });
    } catch (err) {
      this.capacity.release(request.completion_id);
      throw new ServiceError(ErrorCode.Unavailable, `The inference queue is unavailable: ${(err as Error).message}`, { retryAfterSeconds: 1 });
    }
    return {
      model: request.params.model,
      base_model: resolved.base_model,
      checkpoint_step: resolved.step,
      model_id: resolved.model_id,
      logprobs,
    };
  }
}
