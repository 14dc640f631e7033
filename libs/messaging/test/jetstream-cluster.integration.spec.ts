import { QUEUE_FAILOVER_MS, WorkQueues } from '@trainyard/contracts';
import { startNatsCluster, TestNatsCluster, waitFor } from '@trainyard/testing';
import { connect, NatsConnection } from 'nats';
import { ensureWorkQueue, MessageBus, workQueueDepth } from '../src';

// A work queue on a three-server cluster with three replicas: losing the server that leads
// the stream leaves JetStream unable to take messages until the others elect a new leader.
describe('work queues on a three-server JetStream cluster', () => {
  let cluster: TestNatsCluster;
  let nc: NatsConnection;
  let bus: MessageBus;

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
    nc = await connect({ servers: cluster.url.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    bus = new MessageBus(nc, 'cl');
  }, 60_000);

  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  it('keeps a copy on every server, and raises the replica count of a queue made on one', async () => {
    const single = await ensureWorkQueue(nc, WorkQueues.training, 'cl');
    const jsm = await nc.jetstreamManager();
    expect((await jsm.streams.info(single.stream)).config.num_replicas).toBe(1);
    await ensureWorkQueue(nc, WorkQueues.training, 'cl', { replicas: 3 });
    expect((await jsm.streams.info(single.stream)).config.num_replicas).toBe(3);
  }, 30_000);

  it('queues a message through the loss of the stream leader, once, when the producer waits out the failover', async () => {
    const spec = await ensureWorkQueue(nc, WorkQueues.inference, 'cl', { replicas: 3 });
    const jsm = await nc.jetstreamManager();
    const leader = (await jsm.streams.info(spec.stream)).cluster?.leader;
    const member = cluster.members.find((m) => m.name === leader);
    if (!member) throw new Error(`no member leads ${spec.stream}`);
    await member.kill();

    // Without waiting, the leaderless stream refuses the message.
    await expect(bus.enqueue(WorkQueues.inference, { n: 0 } as never, { id: 'no-wait' })).rejects.toThrow();
    await bus.enqueue(WorkQueues.inference, { n: 1 } as never, { id: 'waits', failoverMs: QUEUE_FAILOVER_MS });
    await bus.enqueue(WorkQueues.inference, { n: 1 } as never, { id: 'waits', failoverMs: QUEUE_FAILOVER_MS });
    // Stored once: asked until the cluster answers (its meta leader may have been the one lost too).
    await waitFor(() => workQueueDepth(nc, WorkQueues.inference, 'cl').then((depth) => depth === 1), { what: 'one message in the queue', timeoutMs: 20_000 });
    await member.start();
  }, 60_000);

  it('makes a work queue while the cluster elects a new meta leader', async () => {
    await cluster.waitForJetStream();
    const leader = await cluster.metaLeader();
    const member = cluster.members.find((m) => m.name === leader);
    if (!member) throw new Error('no meta leader');
    await member.kill();
    try {
      // Asked at once: the first answers are "temporarily unavailable" or none at all.
      const spec = await ensureWorkQueue(nc, WorkQueues.tinker, 'cl', { replicas: 2 });
      const jsm = await nc.jetstreamManager();
      expect((await jsm.consumers.info(spec.stream, spec.consumer)).config.durable_name).toBe(spec.consumer);
    } finally {
      await member.start();
    }
  }, 120_000);
});
