import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ErrorCode, ServiceError, WorkQueues } from '@trainyard/contracts';
import { MessageBus } from '@trainyard/messaging';
import { TrainingJobRepository } from './training-job.repository';
/** How often a model whose head could not be published is tried again. */
export const REPUBLISH_INTERVAL_MS = 5_000;

/**
 * Feeds the training work queue so that the jobs of one model run one at a time, in order:
 * only a model's head job (its oldest unfinished one) is ever published. `advance` is called
 * after a job is created and after one finishes; publishing the same head twice is harmless
 * (JetStream drops a repeated message id within its window, and a claim succeeds only once).
 * A head that could not be published (the bus or the database was down) is tried again
 * until it is: otherwise it, and every later job of its model, would wait for a restart.
 */
@Injectable()
export class JobQueue implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(JobQueue.name);
  private readonly unpublished = new Set<string>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly bus: MessageBus,
    private readonly jobs: TrainingJobRepository,
  ) {}

  /** A crash between storing a job and publishing it must not strand it: republish every head at start. */
  async onApplicationBootstrap(): Promise<void> {
    this.timer = setInterval(() => void this.republish(), REPUBLISH_INTERVAL_MS);
    for (const modelId of await this.jobs.modelsWithQueuedJobs()) {
      await this.advance(modelId).catch((err: Error) => this.logger.warn(`Could not republish jobs of model ${modelId}: ${err.message}`));
    }
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  async advance(modelId: string): Promise<void> {
    try {
      const head = await this.jobs.head(modelId);
      if (head?.status === 'queued') await this.publish(head.id);
      this.unpublished.delete(modelId);
    } catch (err) {
      this.unpublished.add(modelId);
      throw err;
    }
  }

  /**
   * Publishes a head whose message is gone, under an id of its own (`<job>:<attempts>`): the
   * job's first id may still be in the dedupe window, which would drop it. A second message for
   * one job is harmless, as for a repeated head.
   */
  republishHead(jobId: string, attempts: number): Promise<void> {
    return this.publish(jobId, `${jobId}:${attempts}`);
  }

  private async publish(jobId: string, messageId = jobId): Promise<void> {
    try {
      await this.bus.enqueue(WorkQueues.training, { job_id: jobId }, { id: messageId });
    } catch (err) {
      throw new ServiceError(ErrorCode.Unavailable, `The training queue is unavailable: ${(err as Error).message}`, { retryAfterSeconds: 5 });
    }
  }

  private async republish(): Promise<void> {
    for (const modelId of [...this.unpublished]) {
      await this.advance(modelId).then(
        () => this.logger.log(`Published the next job of model ${modelId}, which the queue could not take before`),
        () => undefined,
      );
    }
  }
}
