import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, ModelsChanged, ServiceError, Subjects } from '@trainyard/contracts';
import { MessageBus } from '@trainyard/messaging';
import { withDeadline } from '@trainyard/runtime';
import { RegistryConfig } from '../config/registry.config';

/**
 * Tells every chat replica that a model's resolutions may have changed, so that none serves
 * a checkpoint from its cache that is no longer the answer.
 *
 * Ordering: the announcement is published on this process's MessageBus connection and flushed (a
 * PING answered after the PUB) before the change is acknowledged, so by the time anyone
 * learns of the change, the NATS server has already queued the announcement for every
 * subscriber. Any request that follows from the acknowledgement reaches the server later, and
 * a chat replica reads the announcements on the connection its requests arrive on, so it has
 * read the announcement before that request (apps/chat model-resolutions.ts). That holds on
 * one NATS server; across a cluster the announcement still has a route hop to travel.
 */
@Injectable()
export class ModelChangesPublisher {
  constructor(
    private readonly bus: MessageBus,
    @Inject(RegistryConfig) private readonly config: RegistryConfig,
  ) {}

  /** Resolves once the NATS server has the announcement; fails with `unavailable` otherwise. */
  async announce(change: ModelsChanged): Promise<void> {
    try {
      this.bus.publish(Subjects.registry.modelsChanged, { entity_id: change.entity_id, model_id: change.model_id });
      await withDeadline(this.bus.flush(), this.config.RPC_TIMEOUT_MS, `no answer from the NATS server within ${this.config.RPC_TIMEOUT_MS} ms`);
    } catch (err) {
      // The change is saved, but a cache may still serve the old answer: it must not be acknowledged.
      // Retrying the request is safe (every changing request is idempotent) and announces again.
      throw new ServiceError(
        ErrorCode.Unavailable,
        `The change to model ${change.model_id} was saved but could not be announced to the chat service (${(err as Error).message}); retry the request`,
        { retryAfterSeconds: 1 },
      );
    }
  }
}
