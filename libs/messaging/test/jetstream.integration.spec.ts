import { WorkQueues } from '@trainyard/contracts';
import { startNatsServer, TestNatsServer } from '@trainyard/testing';
import { connect, NatsConnection, RetentionPolicy, StringCodec } from 'nats';
import { ensureWorkQueue, workQueueDepth } from '../src';

describe('work queues on a real JetStream', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
  });

  afterAll(async () => {
    await nc.close();
    await nats.stop();
  });

  it('creates a work-queue stream with a shared durable consumer, and converges when called again', async () => {
    const first = await ensureWorkQueue(nc, WorkQueues.training, 'itest');
    const again = await Promise.all([ensureWorkQueue(nc, WorkQueues.training, 'itest'), ensureWorkQueue(nc, WorkQueues.training, 'itest')]);
    expect(again).toEqual([first, first]);

    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(first.stream);
    expect(info.config.retention).toBe(RetentionPolicy.Workqueue);
    expect(info.config.subjects).toEqual(['itest.work.training.v1']);
    const consumers = await jsm.consumers.list(first.stream).next();
    expect(consumers.map((c) => c.name)).toEqual(['training-workers']);
  });

  it('takes the ack wait of the queue spec, and updates an existing consumer to it', async () => {
    const jsm = await nc.jetstreamManager();
    const spec = await ensureWorkQueue(nc, WorkQueues.training, 'acks', { ackWaitMs: 90_000 });
    expect((await jsm.consumers.info(spec.stream, spec.consumer)).config.ack_wait).toBe(90_000 * 1_000_000);
    await ensureWorkQueue(nc, WorkQueues.training, 'acks');
    expect((await jsm.consumers.info(spec.stream, spec.consumer)).config.ack_wait).toBe((WorkQueues.training.ackWaitMs as number) * 1_000_000);
  });

  it('counts pending work and removes it once a worker acknowledges it', async () => {
    const spec = await ensureWorkQueue(nc, WorkQueues.inference, 'itest');
    const js = nc.jetstream();
    await js.publish(spec.subject, StringCodec().encode('job-1'));
    expect(await workQueueDepth(nc, WorkQueues.inference, 'itest')).toBe(1);

    const consumer = await js.consumers.get(spec.stream, spec.consumer);
    const message = await consumer.next({ expires: 2_000 });
    expect(message && StringCodec().decode(message.data)).toBe('job-1');
    await message?.ackAck();
    expect(await workQueueDepth(nc, WorkQueues.inference, 'itest')).toBe(0);
  });

  it('keeps the streams of two prefixes apart', async () => {
    const a = await ensureWorkQueue(nc, WorkQueues.training, 'stack_a');
    const b = await ensureWorkQueue(nc, WorkQueues.training, 'stack_b');
    await nc.jetstream().publish(a.subject, StringCodec().encode('only for a'));
    expect(await workQueueDepth(nc, WorkQueues.training, 'stack_a')).toBe(1);
    expect(await workQueueDepth(nc, WorkQueues.training, 'stack_b')).toBe(0);
    expect(b.stream).toBe('STACK_B_TRAINING_WORK');
  });
});
