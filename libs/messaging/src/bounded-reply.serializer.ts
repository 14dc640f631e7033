import { Logger } from '@nestjs/common';
import { NatsRecordSerializer } from '@nestjs/microservices/serializers';
import { ErrorCode, ServiceError } from '@trainyard/contracts';

/** nats-server's default max_payload: a reply any larger is refused by the client library. */
export const MAX_REPLY_BYTES = 1024 * 1024;
/** Room left for the reply's headers. */
const HEADROOM_BYTES = 8 * 1024;

type Packet = { id?: string; response?: unknown; err?: unknown; isDisposed?: boolean };

/**
 * Serializes a service's replies as Nest does, but never hands NATS one larger than it can
 * carry: nats.js throws MAX_PAYLOAD_EXCEEDED from inside Nest's reply path, where nothing
 * catches it, and the whole process dies. Such a reply becomes a coded internal error (the
 * caller sees a 500, which is a bug to fix at its source, not a crash of every request in flight).
 */
export class BoundedReplySerializer extends NatsRecordSerializer {
  private readonly logger = new Logger(BoundedReplySerializer.name);

  constructor(private readonly maxBytes = MAX_REPLY_BYTES - HEADROOM_BYTES) {
    super();
  }

  override serialize(packet: Packet): ReturnType<NatsRecordSerializer['serialize']> {
    const serialized = super.serialize(packet);
    if (serialized.data.byteLength <= this.maxBytes) return serialized;
    this.logger.error(`A reply of ${serialized.data.byteLength} bytes is larger than a NATS message may be (${this.maxBytes}); sent an error instead`);
    const error = new ServiceError(ErrorCode.Internal, `The reply was too large to send (${serialized.data.byteLength} bytes)`);
    return super.serialize({ id: packet.id, err: error.toWire(), isDisposed: true });
  }
}
