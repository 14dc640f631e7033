import { MessageBus } from '@trainyard/messaging';
import { startNatsServer, TestNatsServer } from '@trainyard/testing';
import { InferenceWorkerConfig } from '../src/config/inference-worker.config';
import { PeerLoads } from '../src/serving/peer-loads';

function worker(bus: MessageBus, instance: string, prefix = ''): PeerLoads {
  const config = Object.assign(new InferenceWorkerConfig(), { INSTANCE_ID: instance, JETSTREAM_PREFIX: prefix });
  const peers = new PeerLoads(config, bus.withStreamPrefix(prefix));
  peers.onModuleInit();
  return peers;
}

/** Waits until `check` holds, re-checking at each announcement heard (bounded by the test's timeout). */
async function until(peers: PeerLoads, check: () => boolean): Promise<void> {
  while (!check()) await peers.nextChange();
}

describe('PeerLoads against a real nats-server', () => {
  let nats: TestNatsServer;
  let bus: MessageBus;
  const started: PeerLoads[] = [];
  const start = (instance: string, prefix?: string) => {
    const peers = worker(bus, instance, prefix);
    started.push(peers);
    return peers;
  };

  beforeAll(async () => {
    nats = await startNatsServer();
    bus = await MessageBus.connect({ servers: nats.url });
  });

  afterEach(() => {
    for (const peers of started.splice(0)) peers.onModuleDestroy();
  });

  afterAll(async () => {
    await bus.close();
    await nats.stop();
  });

  it('lets a busier worker see a lighter peer asking for work, and see it stop asking', async () => {
    const busy = start('busy');
    const light = start('light');
    await bus.flush();
    busy.announce(4, false);
    light.announce(1, true);
    await until(busy, () => busy.lighterPeerAsking(4));
    expect(light.lighterPeerAsking(1)).toBe(false);
    light.announce(2, false);
    await until(busy, () => !busy.lighterPeerAsking(4));
  });

  it('hears only the workers of its own work queue: deployments sharing a nats-server never wait for each other', async () => {
    const mine = start('mine', 'blue');
    const sameQueue = start('same-queue', 'blue');
    const otherDeployment = start('other', 'green');
    await bus.flush();
    otherDeployment.announce(0, true);
    sameQueue.announce(1, true);
    await until(mine, () => mine.lighterPeerAsking(2));
    // Only the peer of its own queue counts: at 1 sequence it is no lighter than 1.
    expect(mine.lighterPeerAsking(1)).toBe(false);
  });

  it('is no longer waited for once it stops', async () => {
    const staying = start('staying');
    const leaving = start('leaving');
    await bus.flush();
    leaving.announce(0, true);
    await until(staying, () => staying.lighterPeerAsking(3));
    leaving.onModuleDestroy();
    started.splice(started.indexOf(leaving), 1);
    await until(staying, () => !staying.lighterPeerAsking(3));
  });
});
