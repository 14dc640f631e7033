import { EventSubject } from '@trainyard/contracts';
import { decodeMessage, MessageBus } from '@trainyard/messaging';
import { startNatsServer, TestNatsServer } from '@trainyard/testing';
import { CompletionEventsHub, CompletionInbox } from '../src/chat/completion-events.hub';

/** The hub routes raw messages whatever they hold: plain strings tell them apart here. */
const texts: EventSubject<string> = { name: 'test.texts' };

async function read(inbox: CompletionInbox, count: number): Promise<string[]> {
  const seen: string[] = [];
  while (seen.length < count) {
    const next = await inbox.next();
    if (next.done) break;
    seen.push(decodeMessage<string>(next.value));
  }
  return seen;
}

describe('CompletionEventsHub against a real nats-server', () => {
  let nats: TestNatsServer;
  let gateway: MessageBus;
  let worker: MessageBus;
  let hub: CompletionEventsHub;

  beforeAll(async () => {
    nats = await startNatsServer();
    gateway = await MessageBus.connect({ servers: nats.url });
    worker = await MessageBus.connect({ servers: nats.url });
    hub = new CompletionEventsHub(gateway);
    await hub.onModuleInit();
  });

  afterAll(async () => {
    hub.onModuleDestroy();
    await gateway.close();
    await worker.close();
    await nats.stop();
  });

  it('routes each completion its own events, in order, from the moment the hub has started', async () => {
    const a = hub.open('chatcmpl-a');
    const b = hub.open('chatcmpl-b');
    expect(a.subject).not.toBe(b.subject);
    for (let i = 0; i < 5; i++) {
      worker.publishTo(texts, a.subject, `a${i}`);
      worker.publishTo(texts, b.subject, `b${i}`);
    }
    expect(await read(a, 5)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4']);
    expect(await read(b, 5)).toEqual(['b0', 'b1', 'b2', 'b3', 'b4']);
    a.close();
    b.close();
  });

  it('forgets a closed completion: its late events go nowhere, and nothing is held for it', async () => {
    const before = hub.openCount;
    const done = hub.open('chatcmpl-done');
    const live = hub.open('chatcmpl-live');
    expect(hub.openCount).toBe(before + 2);
    done.close();
    expect(hub.openCount).toBe(before + 1);
    worker.publishTo(texts, done.subject, 'late');
    worker.publishTo(texts, live.subject, 'live');
    expect(await read(live, 1)).toEqual(['live']);
    expect(await done.next()).toEqual({ done: true, value: undefined });
    live.close();
    expect(hub.openCount).toBe(before);
  });

  it('gives every gateway process its own subjects, so two gateways never read each other’s completions', async () => {
    const other = new CompletionEventsHub(gateway);
    await other.onModuleInit();
    try {
      const mine = hub.open('chatcmpl-same');
      const theirs = other.open('chatcmpl-same');
      expect(mine.subject).not.toBe(theirs.subject);
      worker.publishTo(texts, theirs.subject, 'for the other gateway');
      worker.publishTo(texts, mine.subject, 'for this gateway');
      expect(await read(mine, 1)).toEqual(['for this gateway']);
      expect(await read(theirs, 1)).toEqual(['for the other gateway']);
      mine.close();
    } finally {
      other.onModuleDestroy();
    }
  });
});
