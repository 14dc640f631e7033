import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { TrainingWorkItem, WorkQueues } from '@trainyard/contracts';
import { MessageBus } from '@trainyard/messaging';
import { OrchestratorConfig } from '../config/orchestrator.config';
import { JobQueue } from '../jobs/job-queue';
import { TrainingJobRepository } from '../jobs/training-job.repository';

/**
 * Every model's head job (queued or running) must have a message in the training queue: the
 * message is what a worker is given, held while it trains, and acknowledged only once the
 * outcome is stored. A head without one would wait forever and hold back its model's later
 * jobs. That happens when a message is acknowledged without the job being run (a delivery
 * taken for a duplicate), or lost with the nats-server's JetStream state. Every
 * `STRANDED_JOBS_SCAN_MS` the heads are compared with the queue: a running head without a
 * message goes back to `queued`, and a queued one is published again, so a worker runs it
 * from its start as after any restart.
 */
@Injectable()
export class StrandedJobsWatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(StrandedJobsWatcher.name);
  private timer?: NodeJS.Timeout;
  private scanning = false;

  constructor(
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
    private readonly bus: MessageBus,
    private readonly jobs: TrainingJobRepository,
    private readonly queue: JobQueue,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.scanOnce(), this.config.STRANDED_JOBS_SCAN_MS);
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** One comparison of the heads with the queue; resolves to the jobs put back. Failures (bus or database down) wait for the next scan. */
  async scan(): Promise<string[]> {
    // Heads first, then the queue: a job that ends in between has already left `running`
    // when its message is acknowledged, so `requeue` (which needs the run that was seen) skips it.
    const heads = await this.jobs.heads();
    if (heads.length === 0) return [];
    const held = new Set((await this.bus.queuedPayloads<TrainingWorkItem>(WorkQueues.training)).map((item) => item.job_id));
    const putBack: string[] = [];
    for (const head of heads) {
      if (held.has(head.id)) continue;
      if (head.status === 'running' && !(await this.jobs.requeue(head.id, head.attempts))) continue;
      await this.queue.republishHead(head.id, head.attempts);
      this.logger.warn(`job ${head.id} was ${head.status} with no message in the training queue; published it again`);
      putBack.push(head.id);
    }
    return putBack;
  }

  private async scanOnce(): Promise<void> {
    if (this.scanning) return;
    this.scanning = true;
    try {
      await this.scan();
    } catch (err) {
      this.logger.debug(`stranded-jobs scan skipped: ${(err as Error).message}`);
    } finally {
      this.scanning = false;
    }
  }
}
