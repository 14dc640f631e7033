import { ErrorCode, ServiceError, WorkerAnnouncement } from '@trainyard/contracts';
import { ErrorCode as NatsErrorCode, JSONCodec, NatsConnection, NatsError } from 'nats';
import { ChatConfig } from '../config/chat.config';
import { InferenceCapacity } from './inference-capacity';

const codec = JSONCodec<WorkerAnnouncement>();

function worker(instance: string, active = 0): WorkerAnnouncement {
  return { kind: 'inference', instance, backend: 'wasm', gpu: false, ready: true, started_at: '2026-11-23T00:00:00Z', capacity: { slots: 4, active } };
}

/**
 * A connection whose worker pings answer with `answers()` (an Error: the request fails) and
 * whose inference queue holds `queued` messages. Unit-level: the real NATS paths are covered
 * by the chat-capacity and fault e2e specs.
 */
function fakeConnection(answers: () => WorkerAnnouncement[] | Error, queued = () => 0): NatsConnection {
  return {
    requestMany: async () => {
      const reply = answers();
      if (reply instanceof Error) throw reply;
      return (async function* () {
        for (const a of reply) yield { data: codec.encode(a) };
      })();
    },
    jetstreamManager: async () => ({ streams: { info: async () => ({ state: { messages: queued() } }) } }),
  } as unknown as NatsConnection;
}

function config(overrides: Partial<ChatConfig> = {}): ChatConfig {
  return Object.assign(new ChatConfig(), { WORKER_POLL_MS: 60_000, WORKER_STALE_MS: 1_000, MAX_QUEUED_COMPLETIONS: 2 }, overrides);
}

async function refusal(capacity: InferenceCapacity): Promise<ErrorCode | null> {
  try {
    await capacity.admit();
    return null;
  } catch (err) {
    return (err as ServiceError).code;
  }
}

describe('InferenceCapacity', () => {
  let now = 0;
  beforeEach(() => {
    now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
  });
  afterEach(() => jest.restoreAllMocks());

  it('keeps a worker that misses polls until it has been silent for WORKER_STALE_MS', async () => {
    let answers: WorkerAnnouncement[] | Error = [worker('a')];
    const capacity = new InferenceCapacity(config(), fakeConnection(() => answers));
    capacity.onModuleInit();
    try {
      expect(await refusal(capacity)).toBeNull();
      // Busy in a long forward pass: the poll times out. Still admitted.
      answers = new NatsError('TIMEOUT', NatsErrorCode.Timeout);
      now += 900;
      await (capacity as unknown as { poll(): Promise<void> }).poll();
      expect(await refusal(capacity)).toBeNull();
      // Silent for longer than WORKER_STALE_MS: gone.
      now += 200;
      await (capacity as unknown as { poll(): Promise<void> }).poll();
      expect(await refusal(capacity)).toBe(ErrorCode.Unavailable);
    } finally {
      capacity.onModuleDestroy();
    }
  });

  it('forgets every worker at once when nobody is subscribed to the ping (no responders)', async () => {
    let answers: WorkerAnnouncement[] | Error = [worker('a')];
    const capacity = new InferenceCapacity(config(), fakeConnection(() => answers));
    capacity.onModuleInit();
    try {
      expect(await refusal(capacity)).toBeNull();
      answers = new NatsError('503', NatsErrorCode.NoResponders);
      await (capacity as unknown as { poll(): Promise<void> }).poll();
      expect(await refusal(capacity)).toBe(ErrorCode.Unavailable);
    } finally {
      capacity.onModuleDestroy();
    }
  });

  it('answers 429 once the queue is past the free slots plus MAX_QUEUED_COMPLETIONS', async () => {
    let queued = 0;
    const capacity = new InferenceCapacity(config(), fakeConnection(() => [worker('a', 3)], () => queued));
    capacity.onModuleInit();
    try {
      queued = 2; // 1 free slot + 2 allowed in the queue: room for one more
      await (capacity as unknown as { poll(): Promise<void> }).poll();
      expect(await refusal(capacity)).toBeNull();
      queued = 3;
      await (capacity as unknown as { poll(): Promise<void> }).poll();
      expect(await refusal(capacity)).toBe(ErrorCode.RateLimited);
    } finally {
      capacity.onModuleDestroy();
    }
  });
});
