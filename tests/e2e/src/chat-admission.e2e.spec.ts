import { resolveWorkQueue, WorkQueues } from '@trainyard/contracts';
import { waitFor } from '@trainyard/testing';
import { connect, JetStreamManager, NatsConnection } from 'nats';
import { Stack } from './support/stack';

// Chat admission is exact: at 512 concurrent requests (loopback, one API key, the gateway's
// own limits off so that every request reaches chat), no more completions are admitted than
// the workers' slots plus MAX_QUEUED_COMPLETIONS, and the completions waiting in the inference
// queue never exceed that bound either.

const SLOTS = 4;
const MAX_QUEUED = 16;
const BURST = 512;

interface Outcome {
  status: number;
  retryAfter: string | null;
  message?: string;
}

describe('chat admission at 512 concurrent requests', () => {
  let stack: Stack;
  let key: string;
  let model: string;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    stack = await Stack.start({
      env: {
        MAX_BATCH_SEQUENCES: String(SLOTS),
        MAX_QUEUED_COMPLETIONS: String(MAX_QUEUED),
        // Every request reaches chat admission: the gateway's own limits are shown elsewhere (limits.e2e).
        MAX_IN_FLIGHT_REQUESTS: '0',
        KEY_CONCURRENCY_LIMIT: '0',
        KEY_RATE_LIMIT_REQUESTS: '0',
        // A worker stopped below misses polls; chat must keep counting its slots meanwhile.
        WORKER_STALE_MS: '120000',
      },
    });
    model = stack.addTinyModel();
    key = (await stack.createKey('acme')).key;
    nc = await connect({ servers: stack.nats.url });
    jsm = await nc.jetstreamManager();
  }, 120_000);

  afterAll(async () => {
    await nc?.close();
    await stack?.stop();
  }, 60_000);

  /** Completions waiting in the inference queue: admitted, and not yet taken by a worker. */
  const queueDepth = async () => (await jsm.streams.info(resolveWorkQueue(WorkQueues.inference, stack.jetstreamPrefix).stream)).state.messages;

  const complete = async (): Promise<Outcome> => {
    const res = await stack.fetch('/v1/chat/completions', {
      method: 'POST',
      key,
      signal: AbortSignal.timeout(90_000),
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    });
    const body = (await res.json()) as { error?: { message: string } };
    return { status: res.status, retryAfter: res.headers.get('retry-after'), message: body.error?.message };
  };

  /** Samples the inference queue's depth until `done` settles; resolves with the largest seen. */
  const deepestQueue = async (done: Promise<unknown>): Promise<number> => {
    let over = false;
    const finish = () => (over = true);
    done.then(finish, finish);
    let deepest = 0;
    while (!over) {
      deepest = Math.max(deepest, await queueDepth());
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return deepest;
  };

  const expectRefusals = (refused: Outcome[]) => {
    // Whole outcomes compared, so that a refusal of another kind shows its message.
    for (const o of refused) expect(o).toEqual({ status: 429, retryAfter: '1', message: expect.stringMatching(/All inference workers are busy/) });
  };

  it('admits exactly the slots plus MAX_QUEUED_COMPLETIONS of a burst while the worker takes nothing', async () => {
    await complete(); // the worker has loaded the model
    const worker = stack.pid('inference-worker') as number;
    // Stopped, the worker takes nothing off the queue: every admitted completion waits there.
    process.kill(worker, 'SIGSTOP');
    let answered = 0;
    const outcomes = Promise.all(Array.from({ length: BURST }, () => complete().finally(() => answered++)));
    outcomes.catch(() => undefined);
    try {
      // Every refusal comes back while the worker is stopped; the admitted ones wait in the
      // queue for it. The worker resumes only once every request has been decided (on a loaded
      // machine the last of 512 can take seconds to reach chat), so that no place it frees
      // can admit a late one.
      await waitFor(async () => answered >= BURST - (SLOTS + MAX_QUEUED) && (await queueDepth()) >= SLOTS + MAX_QUEUED, {
        what: 'every refusal to come back and the admitted completions to be queued',
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      // Long enough for any excess admission to show (chat takes well under this per request).
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(await queueDepth()).toBe(SLOTS + MAX_QUEUED);
      expect(answered).toBe(BURST - (SLOTS + MAX_QUEUED));
    } finally {
      process.kill(worker, 'SIGCONT');
    }
    const all = await outcomes;
    expect(all.filter((o) => o.status === 200)).toHaveLength(SLOTS + MAX_QUEUED);
    expectRefusals(all.filter((o) => o.status !== 200));
  }, 120_000);

  it('keeps the queue within the bound through a burst while the worker serves, and frees every place after', async () => {
    const burst = Promise.all(Array.from({ length: BURST }, complete));
    const deepest = await deepestQueue(burst);
    const outcomes = await burst;
    const served = outcomes.filter((o) => o.status === 200);
    // Admissions are released as completions end: more than one bound's worth is served in one burst.
    expect(served.length).toBeGreaterThan(0);
    expectRefusals(outcomes.filter((o) => o.status !== 200));
    // Waiting completions: never more than MAX_QUEUED_COMPLETIONS beyond the worker's slots.
    expect(deepest).toBeLessThanOrEqual(SLOTS + MAX_QUEUED);
    // Every place came back: a burst the size of the bound is admitted whole once the last one ended.
    await waitFor(async () => (await queueDepth()) === 0, {
      what: 'the queue to empty',
      timeoutMs: 30_000,
    });
    // (Each end reaches chat a moment after its answer reached the client: asked again until then.)
    await waitFor(async () => (await Promise.all(Array.from({ length: SLOTS + MAX_QUEUED }, complete))).every((o) => o.status === 200), {
      what: 'a burst the size of the bound to be admitted whole',
      timeoutMs: 20_000,
      intervalMs: 1_000,
    });
  }, 120_000);
});
