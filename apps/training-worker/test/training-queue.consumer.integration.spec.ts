import { ClaimedJob, ClaimJobReply, CompleteJobRequest, ErrorCode, ServiceError, Subjects, WorkQueues } from '@trainyard/contracts';
import { GpuFault } from '@trainyard/engine';
import { MessageBus, RpcClient } from '@trainyard/messaging';
import { GracefulShutdown, ReadinessService } from '@trainyard/runtime';
import { startNatsServer, TestNatsServer } from '@trainyard/testing';
import { TrainingWorkerConfig } from '../src/config/training-worker.config';
import { JobInterrupted, JobRunner } from '../src/training/job-runner';
import { TrainingQueueConsumer } from '../src/training/training-queue.consumer';

/** Resolves once `check` holds, polling (bounded by the test's timeout). */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** The orchestrator as the consumer sees it: claims answered by `claim`, outcomes recorded. */
class FakeRpc {
  readonly claims: Record<string, unknown>[] = [];
  readonly outcomes: CompleteJobRequest[] = [];
  completeAttempts = 0;
  completeFails?: Error;

  constructor(private readonly claim: (jobId: string) => ClaimJobReply) {}

  async request(subject: { name: string }, payload: Record<string, unknown>): Promise<unknown> {
    if (subject.name === Subjects.training.claimJob.name) {
      this.claims.push(payload);
      return this.claim(payload['job_id'] as string);
    }
    if (subject.name === Subjects.training.completeJob.name) {
      this.completeAttempts++;
      if (this.completeFails) throw this.completeFails;
      this.outcomes.push(payload as unknown as CompleteJobRequest);
      return {};
    }
    throw new Error(`unexpected request on ${subject.name}`);
  }
}

/** A runner whose job ends when the test says, or when its signal is aborted. */
class FakeRunner {
  readonly started: { job: ClaimedJob; signal: AbortSignal }[] = [];
  result: () => Promise<number> = async () => 7;

  run(job: ClaimedJob, signal: AbortSignal): Promise<number> {
    this.started.push({ job, signal });
    return new Promise<number>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(new Error('training aborted')), { once: true });
      this.result().then(resolve, reject);
    });
  }
}

const run = (jobId: string): ClaimJobReply => ({
  action: 'run',
  job: { job_id: jobId, type: 'rl', model_id: 'm1', entity_id: 'e1', entity_name: 'acme', model_name: 'wandb-artifact:///acme/p/m', payload: { bucket: 'B', name: 'n', size: 0, sha256: 'x' } },
});

describe('TrainingQueueConsumer against a real nats-server', () => {
  let nats: TestNatsServer;
  let connection: MessageBus;
  let serial = 0;
  const running: TrainingQueueConsumer[] = [];

  beforeAll(async () => {
    nats = await startNatsServer();
    connection = await MessageBus.connect({ servers: nats.url });
  });

  afterEach(async () => {
    for (const consumer of running.splice(0)) await consumer.onModuleDestroy();
  });

  afterAll(async () => {
    await connection?.close();
    await nats?.stop();
  });

  /** A consumer on a queue of its own, with one job on it. */
  async function start(rpc: FakeRpc, runner: FakeRunner) {
    const prefix = `tq${++serial}`;
    const bus = connection.withStreamPrefix(prefix);
    await bus.ensureWorkQueue(WorkQueues.training);
    await bus.enqueue(WorkQueues.training, { job_id: `job-${serial}` });
    const config = Object.assign(new TrainingWorkerConfig(), { JETSTREAM_PREFIX: prefix, INSTANCE_ID: 'worker-1' });
    const shutdown = new GracefulShutdown(new ReadinessService());
    const consumer = new TrainingQueueConsumer(config, bus, rpc as unknown as RpcClient, runner as unknown as JobRunner, shutdown);
    consumer.onApplicationBootstrap();
    running.push(consumer);
    const depth = () => bus.queueDepth(WorkQueues.training);
    return { jobId: `job-${serial}`, consumer, shutdown, depth };
  }

  it('claims the job, trains it, stores the outcome, and only then takes it off the queue', async () => {
    const rpc = new FakeRpc(run);
    const runner = new FakeRunner();
    let finish!: (step: number) => void;
    runner.result = () => new Promise<number>((resolve) => (finish = resolve));
    const { jobId, depth } = await start(rpc, runner);

    await until(() => runner.started.length === 1);
    expect(rpc.claims).toEqual([{ job_id: jobId, worker: 'worker-1', message_seq: expect.any(Number), delivery: 1 }]);
    expect(await depth()).toBe(1);

    finish(7);
    await until(async () => (await depth()) === 0);
    expect(rpc.outcomes).toEqual([{ job_id: jobId, outcome: 'succeeded', checkpoint_step: 7 }]);
  });

  it('drops a job the orchestrator says to skip, without training it', async () => {
    const rpc = new FakeRpc(() => ({ action: 'skip', reason: 'already finished' }));
    const runner = new FakeRunner();
    const { depth } = await start(rpc, runner);
    await until(async () => (await depth()) === 0);
    expect(rpc.claims).toHaveLength(1);
    expect(runner.started).toEqual([]);
    expect(rpc.outcomes).toEqual([]);
  });

  it("reports a job's own failure as its outcome", async () => {
    const rpc = new FakeRpc(run);
    const runner = new FakeRunner();
    runner.result = async () => {
      throw new Error('learning_rate must be positive');
    };
    const { jobId, depth } = await start(rpc, runner);
    await until(async () => (await depth()) === 0);
    expect(rpc.outcomes).toEqual([{ job_id: jobId, outcome: 'failed', error_message: 'learning_rate must be positive' }]);
  });

  it('stops the running job when its cancel is announced, and reports it cancelled', async () => {
    const rpc = new FakeRpc(run);
    const runner = new FakeRunner();
    runner.result = () => new Promise<number>(() => undefined);
    const { jobId, depth } = await start(rpc, runner);
    await until(() => runner.started.length === 1);

    connection.publish(Subjects.training.cancelRequested, { job_id: 'another-job' });
    // The consumer listens on this connection: once flushed, the announcement has reached it.
    await connection.flush();
    expect(runner.started[0].signal.aborted).toBe(false);
    connection.publish(Subjects.training.cancelRequested, { job_id: jobId });
    await until(async () => (await depth()) === 0);
    const reason = runner.started[0].signal.reason;
    expect(reason).toBeInstanceOf(JobInterrupted);
    expect((reason as JobInterrupted).reason).toBe('cancelled');
    expect(rpc.outcomes).toEqual([{ job_id: jobId, outcome: 'cancelled' }]);
  });

  it('hands the running job back to the queue on shutdown, reporting nothing', async () => {
    const rpc = new FakeRpc(run);
    const runner = new FakeRunner();
    runner.result = () => new Promise<number>(() => undefined);
    const { consumer, shutdown, depth } = await start(rpc, runner);
    await until(() => runner.started.length === 1);

    shutdown.begin();
    await consumer.onModuleDestroy();
    expect((runner.started[0].signal.reason as JobInterrupted).reason).toBe('shutdown');
    expect(rpc.outcomes).toEqual([]);
    expect(await depth()).toBe(1);
  });

  it('hands a job whose GPU device was lost back to the queue, reporting nothing, and takes no more', async () => {
    const rpc = new FakeRpc(run);
    const runner = new FakeRunner();
    runner.result = async () => {
      throw new GpuFault('lost', 'unknown, Device lost.');
    };
    const { depth } = await start(rpc, runner);
    await until(() => runner.started.length === 1);
    // Handed back at once (nak without delay), the job would be claimed again if the consumer still pulled.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(rpc.outcomes).toEqual([]);
    expect(rpc.claims).toHaveLength(1);
    expect(await depth()).toBe(1);
  });

  it('keeps the job on the queue when its outcome cannot be stored', async () => {
    const rpc = new FakeRpc(run);
    rpc.completeFails = new ServiceError(ErrorCode.Timeout, 'training.job.complete.v1 timed out');
    const runner = new FakeRunner();
    const { depth } = await start(rpc, runner);
    await until(() => rpc.completeAttempts === 1);
    // The consumer answers the message on this connection: once flushed, an ack would have emptied the queue.
    await connection.flush();
    await connection.flush();
    expect(await depth()).toBe(1);
    expect(rpc.outcomes).toEqual([]);
  });
});
