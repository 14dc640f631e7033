import { resolveWorkQueue, WorkQueueSpec } from '@trainyard/contracts';
import { AckPolicy, DeliverPolicy, ErrorCode, NatsConnection, NatsError, RetentionPolicy, StorageType } from 'nats';

export interface WorkQueueSettings {
  /** How long a worker may hold a message before it is redelivered. */
  ackWaitMs: number;
  /** Deliveries before a message is given up. */
  maxDeliver: number;
  /** Servers of a NATS cluster that each hold the stream (1 on one server; 3 in a cluster). */
  replicas: number;
}

const DEFAULT_SETTINGS: WorkQueueSettings = { ackWaitMs: 60_000, maxDeliver: 5, replicas: 1 };

/** How long ensureWorkQueue asks again while JetStream cannot answer (a cluster electing leaders). */
const ENSURE_WAIT_MS = 60_000;
const ENSURE_RETRY_MS = 250;

/**
 * Creates (or brings up to date) a work-queue stream and its shared durable pull consumer.
 * Safe to call from every replica at every start: it converges on the same definition,
 * replica count included (a deployment that moved to a cluster raises it in place).
 * While JetStream cannot answer (a cluster electing a stream's or a consumer's leader, as it
 * does after a replica count changes) each call is asked again for up to ENSURE_WAIT_MS.
 */
export async function ensureWorkQueue(
  nc: NatsConnection,
  base: WorkQueueSpec,
  prefix: string,
  settings: Partial<WorkQueueSettings> = {},
): Promise<WorkQueueSpec> {
  const spec = resolveWorkQueue(base, prefix);
  const { ackWaitMs, maxDeliver, replicas } = {
    ...DEFAULT_SETTINGS,
    ...(spec.ackWaitMs ? { ackWaitMs: spec.ackWaitMs } : {}),
    ...(spec.maxDeliver ? { maxDeliver: spec.maxDeliver } : {}),
    ...settings,
  };
  const giveUpAt = Date.now() + ENSURE_WAIT_MS;
  const ask = <T>(call: () => Promise<T>) => askWhileUnavailable(call, giveUpAt);
  const jsm = await ask(() => nc.jetstreamManager());
  const stream = {
    name: spec.stream,
    subjects: [spec.subject],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: replicas,
  };
  const existingStream = await ask(() => jsm.streams.info(spec.stream).catch(nullIfNotFound));
  if (existingStream) await ask(() => jsm.streams.update(spec.stream, { subjects: stream.subjects, num_replicas: replicas }));
  else await ask(() => addIgnoringRace(() => jsm.streams.add(stream)));
  const consumer = {
    durable_name: spec.consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: ackWaitMs * 1_000_000,
    max_deliver: maxDeliver,
  };
  const existing = await ask(() => jsm.consumers.info(spec.stream, spec.consumer).catch(nullIfNotFound));
  if (!existing) await ask(() => addIgnoringRace(() => jsm.consumers.add(spec.stream, consumer)));
  else if (existing.config.ack_wait !== consumer.ack_wait || existing.config.max_deliver !== consumer.max_deliver) {
    // A deployment that changed its settings: bring the durable consumer along.
    await ask(() => jsm.consumers.update(spec.stream, spec.consumer, { ack_wait: consumer.ack_wait, max_deliver: consumer.max_deliver }));
  }
  return spec;
}

/** Checks that a work queue exists; resolves to its pending message count. */
export async function workQueueDepth(nc: NatsConnection, base: WorkQueueSpec, prefix: string): Promise<number> {
  const spec = resolveWorkQueue(base, prefix);
  const jsm = await nc.jetstreamManager();
  const info = await jsm.streams.info(spec.stream);
  return info.state.messages;
}

function isNotFound(err: unknown): boolean {
  return err instanceof NatsError && (err.api_error?.err_code === 10059 || /not found/i.test(err.message));
}

function nullIfNotFound(err: unknown): null {
  if (isNotFound(err)) return null;
  throw err;
}

/**
 * JetStream cannot answer now but may shortly: no server took the request, none answered in
 * time, or the cluster said it is temporarily unavailable (10008, while it elects a leader).
 */
export function isJetStreamUnavailable(err: unknown): boolean {
  if (!(err instanceof NatsError)) return false;
  return err.code === ErrorCode.NoResponders || err.code === ErrorCode.Timeout || err.api_error?.err_code === 10008;
}

async function askWhileUnavailable<T>(call: () => Promise<T>, giveUpAt: number): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (!isJetStreamUnavailable(err) || Date.now() + ENSURE_RETRY_MS > giveUpAt) throw err;
      await new Promise((resolve) => setTimeout(resolve, ENSURE_RETRY_MS));
    }
  }
}

/** Two replicas starting together may both try to create: the loser's "already in use" is fine. */
async function addIgnoringRace(add: () => Promise<unknown>): Promise<void> {
  try {
    await add();
  } catch (err) {
    if (!(err instanceof NatsError && /already in use|already exists/i.test(err.message))) throw err;
  }
}
