import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ErrorCode, resolveWorkQueue, ServiceError, TrainingWorkItem, WorkQueues } from '@trainyard/contracts';
import { NATS_CONNECTION } from '@trainyard/messaging';
import { JSONCodec, NatsConnection } from 'nats';
import { OrchestratorConfig } from '../config/orchestrator.config';
import { TrainingJobRepository } from './training-job.repository';

const items = JSONCodec<TrainingWorkItem>();

/**
 * Feeds the training work queue so that the jobs of one model run one at a time, in order:
 * only a model's head job (its oldest unfinished one) is ever published. `advance` is called
 * after a job is created and after one finishes; publishing the same head twice is harmless
 * (JetStream drops a repeated message id within its window, and a claim succeeds only once).
 */
@Injectable()
export class JobQueue implements OnApplicationBootstrap {
  private readonly logger = new Logger(JobQueue.name);

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly config: OrchestratorConfig,
    private readonly jobs: TrainingJobRepository,
  ) {}

  /** A crash between storing a job and publishing it must not strand it: republish every head at start. */
  async onApplicationBootstrap(): Promise<void> {
    for (const modelId of await this.jobs.modelsWithQueuedJobs()) {
      await this.advance(modelId).catch((err: Error) => this.logger.warn(`Could not republish jobs of model ${modelId}: ${err.message}`));
    }
  }

  async advance(modelId: string): Promise<void> {
    const head = await this.jobs.head(modelId);
    if (!head || head.status !== 'queued') return;
    const spec = resolveWorkQueue(WorkQueues.training, this.config.JETSTREAM_PREFIX);
    try {
      await this.nc.jetstream().publish(spec.subject, items.encode({ job_id: head.id }), { msgID: head.id });
    } catch (err) {
      throw new ServiceError(ErrorCode.Unavailable, `The training queue is unavailable: ${(err as Error).message}`, { retryAfterSeconds: 5 });
    }
  }
}
