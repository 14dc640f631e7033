import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { startNatsServer, TestNatsServer } from '@trainyard/testing';
import { connect, NatsConnection } from 'nats';
import { randomBytes } from 'node:crypto';
import { BlobStore } from '../src';

describe('BlobStore on a real JetStream object store', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  let other: NatsConnection;
  let sender: BlobStore;
  let receiver: BlobStore;

  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
    other = await connect({ servers: nats.url });
    sender = new BlobStore(nc, { streamPrefix: 'itest' });
    receiver = new BlobStore(other, { streamPrefix: 'itest' });
  });

  afterAll(async () => {
    await Promise.all([nc.close(), other.close()]);
    await nats.stop();
  });

  it('hands over a payload far larger than a NATS message, intact, and only once', async () => {
    const payload = randomBytes(3 * 1024 * 1024 + 17);
    const ref = await sender.put(payload);
    expect(ref).toMatchObject({ bucket: 'ITEST_BLOBS', size: payload.length });
    expect(JSON.stringify(ref).length).toBeLessThan(300);

    const received = await receiver.take(ref);
    expect(received.equals(payload)).toBe(true);

    const again = await receiver.take(ref).catch((e: ServiceError) => e);
    expect(again).toBeInstanceOf(ServiceError);
    expect((again as ServiceError).code).toBe(ErrorCode.InvalidRequest);
    expect((again as ServiceError).message).toMatch(/expired before it was read/);
  });

  it('carries JSON', async () => {
    const value = { groups: [{ trajectories: [{ reward: 1 }] }], text: 'é'.repeat(10) };
    expect(await receiver.takeJson(await sender.putJson(value))).toEqual(value);
  });

  it('lets one reader read a blob and leave it for the next, who takes it (one blob, two processes)', async () => {
    const ref = await sender.putJson({ groups: [1, 2] });
    expect(await sender.readJson(ref)).toEqual({ groups: [1, 2] });
    expect(await receiver.takeJson(ref)).toEqual({ groups: [1, 2] });
    await expect(sender.read(ref)).rejects.toThrow(/expired before it was read/);
  });

  it('discards a blob nobody will read', async () => {
    const ref = await sender.putJson({ refused: true });
    await sender.discard(ref);
    await expect(receiver.take(ref)).rejects.toThrow(/expired before it was read/);
  });

  it('refuses a blob whose digest does not match the reference', async () => {
    const ref = await sender.put(Buffer.from('hello'));
    const error = await receiver.take({ ...ref, sha256: '0'.repeat(64) }).catch((e: ServiceError) => e);
    expect((error as ServiceError).message).toMatch(/does not match/);
  });

  it('keeps the buckets of two prefixes apart', async () => {
    const ref = await sender.put(Buffer.from('for itest only'));
    const stranger = new BlobStore(nc, { streamPrefix: 'other' });
    const error = await stranger.take(ref).catch((e: ServiceError) => e);
    expect((error as ServiceError).message).toMatch(/not OTHER_BLOBS/);
  });
});
