import { CompletionEnded, ErrorCode, EventSubject, ServiceError, Subjects, WorkerAnnouncement } from '@trainyard/contracts';
import { MessageBus, NoResponders } from '@trainyard/messaging';
import { ChatConfig } from '../config/chat.config';
import { InferenceCapacity } from './inference-capacity';
import { WorkerSignals } from './worker-signals';

function worker(instance: string, slots = 4): WorkerAnnouncement {
  return { kind: 'inference', instance, backend: 'wasm', gpu: false, ready: true, started_at: '2026-11-23T00:00:00Z', capacity: { slots, active: 0 } };
}

interface FakeConnection {
  bus: MessageBus;
  /** Delivers a message on the completion-ended subject, as the gateway publishes it. */
  end(completionId: string): void;
  /** Liveness subjects asked, in order. */
  probed: string[];
}

/**
 * A connection whose worker pings answer with `answers()` (an Error: the request fails) and
 * whose liveness requests answer with `alive()`. Unit-level: the real NATS paths are covered by
 * the chat-admission, chat-capacity and fault e2e specs.
 */
function fakeConnection(answers: () => WorkerAnnouncement[] | Error, alive: (subject: string) => boolean = () => false): FakeConnection {
  let ended: ((payload: CompletionEnded) => void) | undefined;
  const probed: string[] = [];
  const bus: Pick<MessageBus, 'subscribe' | 'probe' | 'gather'> = {
    subscribe: <T>(subject: EventSubject<T>, handler: (payload: T) => void) => {
      if (subject.name === Subjects.chat.completionEnded.name) ended = handler as unknown as typeof ended;
      return { unsubscribe: () => undefined };
    },
    probe: async (subject, { suffix }) => {
      const name = `${subject.name}.${suffix}`;
      probed.push(name);
      return alive(name);
    },
    gather: async <_Req, Res>() => {
      const reply = answers();
      if (reply instanceof Error) throw reply;
      return reply as unknown as Res[];
    },
  };
  return { bus: bus as MessageBus, probed, end: (id) => ended?.({ completion_id: id }) };
}

function config(overrides: Partial<ChatConfig> = {}): ChatConfig {
  return Object.assign(new ChatConfig(), { WORKER_POLL_MS: 60_000, WORKER_STALE_MS: 1_000, MAX_QUEUED_COMPLETIONS: 2, COMPLETION_DEADLINE_MS: 10_000 }, overrides);
}

async function refusal(capacity: InferenceCapacity, id = `c-${Math.random()}`): Promise<ErrorCode | null> {
  try {
    await capacity.admit(id);
    return null;
  } catch (err) {
    return (err as ServiceError).code;
  }
}

const poll = (capacity: InferenceCapacity) => (capacity as unknown as { poll(): Promise<void> }).poll();

describe('InferenceCapacity', () => {
  let now = 0;
  let capacity: InferenceCapacity | undefined;
  beforeEach(() => {
    now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
  });
  afterEach(() => {
    capacity?.onModuleDestroy();
    capacity = undefined;
    jest.restoreAllMocks();
  });

  function start(fake: FakeConnection, overrides: Partial<ChatConfig> = {}): InferenceCapacity {
    capacity = new InferenceCapacity(config(overrides), fake.bus, new WorkerSignals(fake.bus));
    capacity.onModuleInit();
    return capacity;
  }

  it('keeps a worker that misses polls until it has been silent for WORKER_STALE_MS', async () => {
    let answers: WorkerAnnouncement[] | Error = [worker('a')];
    const capacity = start(fakeConnection(() => answers));
    expect(await refusal(capacity)).toBeNull();
    // Busy in a long forward pass: the poll times out. Still admitted.
    answers = new Error('TIMEOUT');
    now += 900;
    await poll(capacity);
    expect(await refusal(capacity)).toBeNull();
    // Silent for longer than WORKER_STALE_MS: gone.
    now += 200;
    await poll(capacity);
    expect(await refusal(capacity)).toBe(ErrorCode.Unavailable);
  });

  it('forgets every worker at once when nobody is subscribed to the ping (no responders)', async () => {
    let answers: WorkerAnnouncement[] | Error = [worker('a')];
    const capacity = start(fakeConnection(() => answers));
    expect(await refusal(capacity)).toBeNull();
    answers = new NoResponders(Subjects.workers.ping.name);
    await poll(capacity);
    expect(await refusal(capacity)).toBe(ErrorCode.Unavailable);
  });

  it('admits exactly the slots plus MAX_QUEUED_COMPLETIONS of a burst, with no poll in between', async () => {
    const capacity = start(fakeConnection(() => [worker('a', 3), worker('b', 1)]));
    const outcomes = await Promise.all(Array.from({ length: 512 }, (_, i) => refusal(capacity, `c${i}`)));
    // 4 slots + 2 queued.
    expect(outcomes.filter((o) => o === null)).toHaveLength(6);
    expect(outcomes.filter((o) => o === ErrorCode.RateLimited)).toHaveLength(506);
    // The same completion asked again (a retried start) is not counted twice, and still admitted.
    expect(await refusal(capacity, 'c0')).toBeNull();
  });

  it('frees a place when the gateway announces a completion over, or when it could not be queued', async () => {
    const fake = fakeConnection(() => [worker('a', 1)]);
    const capacity = start(fake, { MAX_QUEUED_COMPLETIONS: 1 });
    expect(await refusal(capacity, 'one')).toBeNull();
    expect(await refusal(capacity, 'two')).toBeNull();
    expect(await refusal(capacity, 'three')).toBe(ErrorCode.RateLimited);
    fake.end('one');
    fake.end('one');
    fake.end('never-admitted');
    expect(await refusal(capacity, 'three')).toBeNull();
    expect(await refusal(capacity, 'four')).toBe(ErrorCode.RateLimited);
    capacity.release('two');
    expect(await refusal(capacity, 'four')).toBeNull();
    expect(await refusal(capacity, 'five')).toBe(ErrorCode.RateLimited);
  });

  it('releases an admission never announced over once it is past its deadline and no worker holds it', async () => {
    const held = new Set(['kept']);
    const fake = fakeConnection(
      () => [worker('a', 1)],
      (subject) => [...held].some((id) => subject.endsWith(`.${id}`)),
    );
    const capacity = start(fake, { MAX_QUEUED_COMPLETIONS: 1 });
    expect(await refusal(capacity, 'kept')).toBeNull();
    expect(await refusal(capacity, 'lost')).toBeNull();
    expect(await refusal(capacity, 'other')).toBe(ErrorCode.RateLimited);
    // Before the deadline nobody is asked.
    await poll(capacity);
    expect(fake.probed).toEqual([]);
    now += 10_001;
    await poll(capacity);
    await new Promise((resolve) => setImmediate(resolve));
    expect(fake.probed.sort()).toEqual(['inference.completion.alive.v1.kept', 'inference.completion.alive.v1.lost']);
    // "lost" is held by nobody: released; "kept" is still being generated: still counted.
    expect(await refusal(capacity, 'other')).toBeNull();
    expect(await refusal(capacity, 'more')).toBe(ErrorCode.RateLimited);
  });
});
