import { Empty, EventSubject, RpcSubject, WorkQueueSpec } from '@trainyard/contracts';
import { startNatsServer, TestNatsServer } from '@trainyard/testing';
import { connect } from 'nats';
import { encodeMessage, MessageBus, NoResponders, WorkMessage } from '../src';

interface Note {
  n: number;
}

const notes: EventSubject<Note> = { name: 'test.notes.v1' };
const ping: RpcSubject<Empty, { who: string }> = { name: 'test.ping.v1' };
const alive: RpcSubject<Empty, Empty> = { name: 'test.alive.v1' };
/** A short ack wait, so that redelivery is seen within a test. */
const jobs: WorkQueueSpec<{ id: string }> = { stream: 'BUS_JOBS', subject: 'work.bus-jobs.v1', consumer: 'bus-workers', ackWaitMs: 1_000 };

/** Resolves once `check` holds, polling (bounded by the test's timeout). */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** The next message of the queue, waiting for it (bounded by the test's timeout). */
async function nextOf<T>(bus: MessageBus, queue: WorkQueueSpec<T>): Promise<WorkMessage<T>> {
  const reader = await bus.consume(queue);
  for (;;) {
    const message = await reader.next(1_000);
    if (message) return message;
  }
}

describe('MessageBus against a real nats-server', () => {
  let nats: TestNatsServer;
  let a: MessageBus;
  let b: MessageBus;
  let prefixes = 0;

  beforeAll(async () => {
    nats = await startNatsServer();
    a = await MessageBus.connect({ servers: nats.url });
    b = await MessageBus.connect({ servers: nats.url });
  });

  afterAll(async () => {
    await a.close();
    await b.close();
    await nats.stop();
  });

  /** Both connections on a work queue of their own. */
  async function queueBuses(): Promise<[MessageBus, MessageBus]> {
    const prefix = `bus${++prefixes}`;
    const [pa, pb] = [a.withStreamPrefix(prefix), b.withStreamPrefix(prefix)];
    await pa.ensureWorkQueue(jobs);
    return [pa, pb];
  }

  describe('events', () => {
    it('delivers every event to every subscriber without a queue group, in order', async () => {
      const seenA: number[] = [];
      const seenB: number[] = [];
      const subs = [a.subscribe(notes, (note) => seenA.push(note.n)), b.subscribe(notes, (note) => seenB.push(note.n))];
      await Promise.all([a.flush(), b.flush()]);
      for (let n = 0; n < 5; n++) a.publish(notes, { n });
      await until(() => seenA.length === 5 && seenB.length === 5);
      expect(seenA).toEqual([0, 1, 2, 3, 4]);
      expect(seenB).toEqual([0, 1, 2, 3, 4]);
      for (const sub of subs) sub.unsubscribe();
    });

    it('shares the events out within a queue group: each goes to one member', async () => {
      const seen: number[][] = [[], []];
      const subs = [a, b].map((bus, i) => bus.subscribe(notes, (note) => seen[i].push(note.n), { queue: 'sharers' }));
      await Promise.all([a.flush(), b.flush()]);
      for (let n = 0; n < 40; n++) a.publish(notes, { n });
      await until(() => seen[0].length + seen[1].length === 40);
      expect([...seen[0], ...seen[1]].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, n) => n));
      // Random assignment: with 40 messages, both members get some (a failure here has odds of 2^-39).
      expect(seen[0].length).toBeGreaterThan(0);
      expect(seen[1].length).toBeGreaterThan(0);
      for (const sub of subs) sub.unsubscribe();
    });

    it('keeps suffixed subjects apart: a subscriber hears its own suffix only', async () => {
      const seen: number[] = [];
      const sub = b.subscribe(notes, (note) => seen.push(note.n), { suffix: 'job-1' });
      await b.flush();
      a.publish(notes, { n: 1 }, { suffix: 'job-2' });
      a.publish(notes, { n: 2 });
      a.publish(notes, { n: 3 }, { suffix: 'job-1' });
      await until(() => seen.length >= 1);
      await a.flush();
      await b.flush();
      expect(seen).toEqual([3]);
      sub.unsubscribe();
    });

    it('publishes to a subject given in full (a reply subject)', async () => {
      const seen: number[] = [];
      const sub = b.subscribe(notes, (note) => seen.push(note.n), { suffix: 'gw.c1' });
      await b.flush();
      a.publishTo(notes, `${notes.name}.gw.c1`, { n: 7 });
      await until(() => seen.length === 1);
      expect(seen).toEqual([7]);
      sub.unsubscribe();
    });

    it('hands a message that is not JSON to onUndecodable, and goes on with the next', async () => {
      const raw = await connect({ servers: nats.url });
      try {
        const seen: number[] = [];
        const undecodable: Error[] = [];
        const sub = b.subscribe(notes, (note) => seen.push(note.n), { onUndecodable: (err) => undecodable.push(err) });
        await b.flush();
        raw.publish(notes.name, new TextEncoder().encode('not json'));
        raw.publish(notes.name, encodeMessage<Note>({ n: 8 }));
        await until(() => seen.length === 1);
        expect(undecodable).toHaveLength(1);
        expect(seen).toEqual([8]);
        sub.unsubscribe();
      } finally {
        await raw.close();
      }
    });

    it('stops delivering once unsubscribed, and unsubscribing after close is harmless', async () => {
      const own = await MessageBus.connect({ servers: nats.url });
      const seen: number[] = [];
      const sub = own.subscribe(notes, (note) => seen.push(note.n));
      await own.flush();
      a.publish(notes, { n: 1 });
      await until(() => seen.length === 1);
      sub.unsubscribe();
      await own.flush();
      a.publish(notes, { n: 2 });
      await a.flush();
      await own.flush();
      expect(seen).toEqual([1]);
      const late = own.subscribe(notes, () => undefined);
      await own.close();
      expect(() => late.unsubscribe()).not.toThrow();
    });
  });

  describe('probes and scatter-gather', () => {
    it('tells an answered probe (true) from nobody listening (false) and from silence (null)', async () => {
      const answering = b.answerProbes(alive, { suffix: 'held' });
      await b.flush();
      expect(await a.probe(alive, { suffix: 'held', timeoutMs: 1_000 })).toBe(true);
      expect(await a.probe(alive, { suffix: 'nobody', timeoutMs: 1_000 })).toBe(false);
      // Someone listens but never answers: a holder too busy to answer.
      const silent = b.subscribe({ name: `${alive.name}.busy` } as EventSubject<unknown>, () => undefined);
      await b.flush();
      expect(await a.probe(alive, { suffix: 'busy', timeoutMs: 200 })).toBeNull();
      answering.unsubscribe();
      silent.unsubscribe();
      await b.flush();
      expect(await a.probe(alive, { suffix: 'held', timeoutMs: 1_000 })).toBe(false);
    });

    it('gathers one answer from every responder, and throws NoResponders when there is none', async () => {
      await expect(a.gather(ping, {}, { maxWaitMs: 500, jitterMs: 100 })).rejects.toBeInstanceOf(NoResponders);
      const responders = [b.respond(ping, () => ({ who: 'b1' })), b.respond(ping, async () => ({ who: 'b2' })), a.respond(ping, () => ({ who: 'a1' }))];
      await Promise.all([a.flush(), b.flush()]);
      const answers = await a.gather(ping, {}, { maxWaitMs: 2_000, jitterMs: 200 });
      expect(answers.map((x) => x.who).sort()).toEqual(['a1', 'b1', 'b2']);
      for (const r of responders) r.unsubscribe();
    });
  });

  describe('work queues', () => {
    it('hands each enqueued message to one consumer, typed as it was sent, and an acked one is gone', async () => {
      const [producer, worker] = await queueBuses();
      await producer.enqueue(jobs, { id: 'j1' });
      expect(await producer.queueDepth(jobs)).toBe(1);
      const message = await nextOf(worker, jobs);
      expect(message.payload).toEqual({ id: 'j1' });
      expect(message.redelivered).toBe(false);
      expect(message.redeliveryCount).toBe(1);
      message.ack();
      await until(async () => (await producer.queueDepth(jobs)) === 0);
      expect(await (await worker.consume(jobs)).next(1_000)).toBeNull();
    });

    it('stores a message once per id within the dedupe window', async () => {
      const [producer] = await queueBuses();
      await producer.enqueue(jobs, { id: 'same' }, { id: 'same' });
      await producer.enqueue(jobs, { id: 'same' }, { id: 'same' });
      await producer.enqueue(jobs, { id: 'other' });
      expect(await producer.queueDepth(jobs)).toBe(2);
    });

    it('redelivers a nak-ed message at once, and says it is a redelivery', async () => {
      const [producer, worker] = await queueBuses();
      await producer.enqueue(jobs, { id: 'again' });
      const first = await nextOf(worker, jobs);
      first.nak();
      const second = await nextOf(producer, jobs);
      expect(second.payload).toEqual({ id: 'again' });
      expect(second.redelivered).toBe(true);
      expect(second.redeliveryCount).toBe(2);
      // The same message: its stream sequence is kept across deliveries; another message has its own.
      expect(second.sequence).toBe(first.sequence);
      await producer.enqueue(jobs, { id: 'again' });
      second.ack();
      const third = await nextOf(worker, jobs);
      expect(third.sequence).toBeGreaterThan(first.sequence);
      third.ack();
    });

    it('redelivers a message its holder neither acked nor kept alive once the ack wait is over, and not while it says working', async () => {
      const [producer, worker] = await queueBuses();
      await producer.enqueue(jobs, { id: 'held' });
      const held = await nextOf(worker, jobs);
      // Kept alive past the 1 s ack wait: nobody else gets it.
      const reader = await producer.consume(jobs);
      const heartbeat = setInterval(() => held.working(), 300);
      try {
        expect(await reader.next(1_600)).toBeNull();
      } finally {
        clearInterval(heartbeat);
      }
      // Let go without an ack (its holder died): it comes back.
      const again = await nextOf(producer, jobs);
      expect(again.payload).toEqual({ id: 'held' });
      expect(again.redelivered).toBe(true);
      again.ack();
    }, 15_000);

    it('calls onGivenUp with the message JetStream stopped redelivering, then removes it from the stream', async () => {
      const [producer, worker] = await queueBuses();
      // A queue of its own with two deliveries at most.
      const capped: WorkQueueSpec<{ id: string }> = { ...jobs, stream: 'BUS_CAPPED', subject: 'work.bus-capped.v1' };
      await producer.ensureWorkQueue(capped, { maxDeliver: 2 });
      const givenUp: { id: string; deliveries: number }[] = [];
      const watcher = producer.onGivenUp(capped, async (item, deliveries) => void givenUp.push({ id: item.id, deliveries }));
      await producer.flush();
      await producer.enqueue(capped, { id: 'doomed' });
      (await nextOf(worker, capped)).nak();
      (await nextOf(worker, capped)).nak();
      // JetStream gives up when it would deliver the message a third time: a worker must be asking.
      const reader = await worker.consume(capped);
      while (givenUp.length === 0) expect(await reader.next(1_000)).toBeNull();
      expect(givenUp).toEqual([{ id: 'doomed', deliveries: 2 }]);
      await until(async () => (await producer.queueDepth(capped)) === 0);
      watcher.unsubscribe();
    }, 15_000);
  });
});
