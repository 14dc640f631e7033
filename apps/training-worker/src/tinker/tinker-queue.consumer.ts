import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Subjects, TinkerWorkItem, WorkQueues } from '@trainyard/contracts';
import { BlobStore, MessageBus, RpcClient, WorkMessage } from '@trainyard/messaging';
import { GracefulShutdown, onAbort } from '@trainyard/runtime';
import { TrainingWorkerConfig } from '../config/training-worker.config';
import { errorMessage } from '../training/job-runner';
import { TinkerCallFailed, TinkerExecutor } from './tinker-executor';

/** Tells JetStream the call is still being worked on, well within the queue's ack wait. */
const HEARTBEAT_MS = 5_000;
/** How soon a call that must wait its turn (or for the worker holding its client) is delivered again. */
const WAIT_MS = 100;

/**
 * Pulls Tinker calls one at a time, beside the training jobs' queue. The orchestrator decides
 * whether a call runs now (claim): only its client's next call in seq_id order, and only on the
 * worker that holds the client; otherwise it goes back to the queue for a moment. A call's
 * message is acknowledged once its result or error is stored by the orchestrator.
 */
@Injectable()
export class TinkerQueueConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(TinkerQueueConsumer.name);
  private stopping = false;
  private consuming?: Promise<void>;

  constructor(
    @Inject(TrainingWorkerConfig) private readonly config: TrainingWorkerConfig,
    private readonly bus: MessageBus,
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
    private readonly executor: TinkerExecutor,
    private readonly shutdown: GracefulShutdown,
  ) {}

  onApplicationBootstrap(): void {
    this.consuming = this.shutdown.track(this.consume());
    onAbort(this.shutdown.stopping, () => (this.stopping = true));
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await this.consuming;
  }

  private async consume(): Promise<void> {
    while (!this.stopping) {
      try {
        const queue = await this.bus.consume(WorkQueues.tinker);
        while (!this.stopping) {
          const message = await queue.next(1_000);
          if (message) await this.handle(message);
        }
      } catch (err) {
        if (this.stopping) return;
        this.logger.warn(`Tinker queue unavailable (${(err as Error).message}); retrying`);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  }

  private async handle(message: WorkMessage<TinkerWorkItem>): Promise<void> {
    if (this.stopping) {
      message.nak();
      return;
    }
    const { request_id } = message.payload;
    const worker = this.config.INSTANCE_ID;
    const heartbeat = setInterval(() => message.working(), HEARTBEAT_MS);
    try {
      const claim = await this.rpc.request(Subjects.training.tinker.claim, { request_id, worker });
      if (claim.action === 'wait') {
        message.nak(WAIT_MS);
        return;
      }
      if (claim.action === 'skip') {
        message.ack();
        return;
      }
      try {
        const result = await this.executor.run(claim.call);
        await this.rpc.request(Subjects.training.tinker.complete, { request_id, worker, outcome: 'succeeded', result: await this.blobs.putJson(result) });
      } catch (err) {
        if (!(err instanceof TinkerCallFailed)) throw err;
        if (err.category === 'Server') this.logger.warn(`Tinker call ${request_id} (${claim.call.client_id} #${claim.call.seq_id}): ${err.message}`);
        await this.rpc.request(Subjects.training.tinker.complete, {
          request_id,
          worker,
          outcome: 'failed',
          error: err.message,
          category: err.category,
          state_lost: err.stateLost,
        });
      }
      message.ack();
    } catch (err) {
      // The orchestrator, registry or bus could not be reached: the call is delivered again later.
      this.logger.error(`Tinker call ${request_id}: ${errorMessage(err)}; it will be redelivered`);
      message.nak(Math.min(30_000, 1_000 * 2 ** Math.min(5, message.redeliveryCount - 1)));
    } finally {
      clearInterval(heartbeat);
    }
  }
}
