import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ClaimedJob, CompleteJobRequest, Subjects, TrainingWorkItem, WorkQueues } from '@trainyard/contracts';
import { GpuFault } from '@trainyard/engine';
import { EventSubscription, MessageBus, RpcClient, WorkMessage } from '@trainyard/messaging';
import { GracefulShutdown, onAbort } from '@trainyard/runtime';
import { TrainingWorkerConfig } from '../config/training-worker.config';
import { errorMessage, JobInterrupted, JobRunner } from './job-runner';
/** Tells JetStream the job is still being worked on, well within the queue's ack wait. */
const HEARTBEAT_MS = 5_000;

/**
 * Pulls one training job at a time from the durable work queue. The message stays
 * unacknowledged while the job runs (kept alive by heartbeats), so if this process dies
 * JetStream redelivers it and another worker restarts the job; it is acknowledged only once
 * the outcome is stored by the orchestrator. On SIGTERM the running job stops at its next
 * step and its message is handed back (nak, never ack), so a worker redoes it from its start.
 */
@Injectable()
export class TrainingQueueConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(TrainingQueueConsumer.name);
  private stopping = false;
  private consuming?: Promise<void>;
  private cancelSubscription?: EventSubscription;
  private current?: { jobId: string; abort: AbortController };

  constructor(
    @Inject(TrainingWorkerConfig) private readonly config: TrainingWorkerConfig,
    private readonly bus: MessageBus,
    private readonly rpc: RpcClient,
    private readonly runner: JobRunner,
    private readonly shutdown: GracefulShutdown,
  ) {}

  onApplicationBootstrap(): void {
    this.cancelSubscription = this.bus.subscribe(Subjects.training.cancelRequested, ({ job_id }) => this.cancel(job_id));
    this.consuming = this.shutdown.track(this.consume());
    onAbort(this.shutdown.stopping, () => this.handBack());
  }

  async onModuleDestroy(): Promise<void> {
    this.handBack();
    this.cancelSubscription?.unsubscribe();
    await this.consuming;
  }

  /** Stops pulling, and stops the running job without reporting it: its message goes back to the queue for another worker. */
  private handBack(): void {
    this.stopping = true;
    this.current?.abort.abort(new JobInterrupted('shutdown'));
  }

  private cancel(jobId: string): void {
    if (this.current?.jobId === jobId && !this.current.abort.signal.aborted) {
      this.logger.log(`job ${jobId}: cancel requested`);
      this.current.abort.abort(new JobInterrupted('cancelled'));
    }
  }

  private async consume(): Promise<void> {
    while (!this.stopping) {
      try {
        const queue = await this.bus.consume(WorkQueues.training);
        while (!this.stopping) {
          const message = await queue.next(1_000);
          if (message) await this.handle(message);
        }
      } catch (err) {
        if (this.stopping) return;
        this.logger.warn(`training queue unavailable (${(err as Error).message}); retrying`);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  }

  private async handle(message: WorkMessage<TrainingWorkItem>): Promise<void> {
    if (this.stopping) {
      message.nak();
      return;
    }
    const { job_id } = message.payload;
    const heartbeat = setInterval(() => message.working(), HEARTBEAT_MS);
    try {
      const claim = await this.rpc.request(Subjects.training.claimJob, {
        job_id,
        worker: this.config.INSTANCE_ID,
        message_seq: message.sequence,
        delivery: message.redeliveryCount,
      });
      if (claim.action === 'skip') {
        this.logger.log(`job ${job_id}: delivery ${message.redeliveryCount} skipped (${claim.reason})`);
        message.ack();
        return;
      }
      this.logger.log(`job ${job_id}: delivery ${message.redeliveryCount} claimed`);
      const outcome = await this.train(claim.job);
      if (!outcome) {
        message.nak();
        return;
      }
      await this.rpc.request(Subjects.training.completeJob, outcome);
      message.ack();
    } catch (err) {
      // The orchestrator or registry could not be reached: try the job again later, backing off.
      this.logger.error(`job ${job_id}: ${errorMessage(err)}; it will be redelivered`);
      message.nak(Math.min(60_000, 5_000 * 2 ** (message.redeliveryCount - 1)));
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** The job's outcome, or undefined when this worker is shutting down (or lost its GPU) and the job must run elsewhere. */
  private async train(job: ClaimedJob): Promise<CompleteJobRequest | undefined> {
    // Shutdown began while the job was being claimed.
    if (this.stopping) return undefined;
    const abort = new AbortController();
    this.current = { jobId: job.job_id, abort };
    const started = Date.now();
    try {
      const step = await this.runner.run(job, abort.signal, () => this.cancel(job.job_id));
      this.logger.log(`job ${job.job_id}: succeeded in ${Date.now() - started} ms`);
      return { job_id: job.job_id, outcome: 'succeeded', checkpoint_step: step };
    } catch (err) {
      const reason = abort.signal.reason;
      if (reason instanceof JobInterrupted) {
        return reason.reason === 'cancelled' ? { job_id: job.job_id, outcome: 'cancelled' } : undefined;
      }
      if (isInfrastructure(err)) throw err;
      // Not the job's fault: this worker exits (main.ts) and another, or this one restarted, runs it.
      if (err instanceof GpuFault && err.kind === 'lost') {
        this.logger.warn(`job ${job.job_id}: ${err.message}; handing it back`);
        this.stopping = true;
        return undefined;
      }
      this.logger.warn(`job ${job.job_id}: failed: ${errorMessage(err)}`);
      return { job_id: job.job_id, outcome: 'failed', error_message: errorMessage(err) };
    } finally {
      this.current = undefined;
    }
  }
}

/** NATS timeouts and missing services are retried; anything else is the job's own failure. */
function isInfrastructure(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'timeout' || code === 'unavailable';
}
