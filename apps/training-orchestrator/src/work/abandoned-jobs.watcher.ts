import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { QueueGroups, resolveWorkQueue, TrainingWorkItem, WorkQueues } from '@trainyard/contracts';
import { NATS_CONNECTION } from '@trainyard/messaging';
import { JSONCodec, NatsConnection, Subscription } from 'nats';
import { OrchestratorConfig } from '../config/orchestrator.config';
import { JobQueue } from '../jobs/job-queue';
import { TrainingJobRepository } from '../jobs/training-job.repository';
import { TrainingJobsService } from '../jobs/training-jobs.service';

interface MaxDeliveriesAdvisory {
  stream: string;
  consumer: string;
  stream_seq: number;
  deliveries: number;
}

/**
 * When JetStream gives up on a training message (every delivery ended with the worker dying
 * or unable to report), the job would stay "running" and block its model's queue forever.
 * JetStream's max-deliveries advisory names the message: its job is failed, and the model's
 * next job goes ahead.
 */
@Injectable()
export class AbandonedJobsWatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(AbandonedJobsWatcher.name);
  private subscription?: Subscription;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly config: OrchestratorConfig,
    private readonly jobs: TrainingJobRepository,
    private readonly service: TrainingJobsService,
    private readonly queue: JobQueue,
  ) {}

  onApplicationBootstrap(): void {
    const spec = resolveWorkQueue(WorkQueues.training, this.config.JETSTREAM_PREFIX);
    const advisories = JSONCodec<MaxDeliveriesAdvisory>();
    this.subscription = this.nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${spec.stream}.${spec.consumer}`, {
      queue: QueueGroups.training,
      callback: (err, msg) => {
        if (err) return;
        const advisory = advisories.decode(msg.data);
        this.abandon(spec.stream, advisory).catch((e: Error) => this.logger.error(`Could not fail abandoned message ${advisory.stream_seq}: ${e.message}`));
      },
    });
  }

  onModuleDestroy(): void {
    this.subscription?.unsubscribe();
  }

  private async abandon(stream: string, advisory: MaxDeliveriesAdvisory): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    const message = await jsm.streams.getMessage(stream, { seq: advisory.stream_seq });
    const { job_id } = JSONCodec<TrainingWorkItem>().decode(message.data);
    const reason = `Training gave up after ${advisory.deliveries} attempts: the training worker stopped or could not report each time`;
    if (await this.jobs.finish(job_id, 'failed', { errorMessage: reason })) {
      this.logger.error(`job ${job_id}: ${reason}`);
      await this.service.recordFinalEvent(job_id, 'failed', reason);
      const job = await this.jobs.findSummary(job_id);
      if (job) await this.queue.advance(job.modelId);
    }
    await jsm.streams.deleteMessage(stream, advisory.stream_seq).catch(() => undefined);
  }
}
