import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { QueueGroups, TrainingWorkItem, WorkQueues } from '@trainyard/contracts';
import { EventSubscription, MessageBus } from '@trainyard/messaging';
import { JobQueue } from '../jobs/job-queue';
import { TrainingJobRepository } from '../jobs/training-job.repository';
import { TrainingJobsService } from '../jobs/training-jobs.service';

/**
 * When JetStream gives up on a training message (every delivery ended with the worker dying
 * or unable to report), the job would stay "running" and block its model's queue forever.
 * JetStream's max-deliveries advisory names the message: its job is failed, and the model's
 * next job goes ahead.
 */
@Injectable()
export class AbandonedJobsWatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(AbandonedJobsWatcher.name);
  private subscription?: EventSubscription;

  constructor(
    private readonly bus: MessageBus,
    private readonly jobs: TrainingJobRepository,
    private readonly service: TrainingJobsService,
    private readonly queue: JobQueue,
  ) {}

  onApplicationBootstrap(): void {
    this.subscription = this.bus.onGivenUp(WorkQueues.training, (item, deliveries) => this.abandon(item, deliveries), {
      queue: QueueGroups.training,
      onError: (e, streamSeq) => this.logger.error(`Could not fail abandoned message ${streamSeq}: ${e.message}`),
    });
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }

  /** The message is removed from the stream once this resolves. */
  private async abandon({ job_id }: TrainingWorkItem, deliveries: number): Promise<void> {
    const reason = `Training gave up after ${deliveries} attempts: the training worker stopped or could not report each time`;
    if (await this.service.finish(job_id, 'failed', { errorMessage: reason })) {
      this.logger.error(`job ${job_id}: ${reason}`);
      const job = await this.jobs.findSummary(job_id);
      if (job) await this.queue.advance(job.modelId);
    }
  }
}
