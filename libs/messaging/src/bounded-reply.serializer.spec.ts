import { JSONCodec } from 'nats';
import { BoundedReplySerializer } from './bounded-reply.serializer';

const codec = JSONCodec<{ id: string; response?: unknown; err?: { code: string; message: string }; isDisposed?: boolean }>();

describe('BoundedReplySerializer', () => {
  const serializer = new BoundedReplySerializer(1_000);

  it('passes a reply that fits through unchanged', () => {
    const { data } = serializer.serialize({ id: 'r1', response: { ok: true }, isDisposed: true });
    expect(codec.decode(data)).toMatchObject({ id: 'r1', response: { ok: true }, isDisposed: true });
  });

  it('turns a reply NATS could not carry into a coded internal error for the same request', () => {
    const { data } = serializer.serialize({ id: 'r2', err: { code: 'validation_failed', message: 'x'.repeat(5_000) }, isDisposed: true });
    expect(data.byteLength).toBeLessThan(1_000);
    const reply = codec.decode(data);
    expect(reply.id).toBe('r2');
    expect(reply.isDisposed).toBe(true);
    expect(reply.err).toMatchObject({ code: 'internal', message: expect.stringMatching(/^The reply was too large to send/) });
  });
});
