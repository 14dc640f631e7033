import { ClientNats, ReadPacket, WritePacket } from '@nestjs/microservices';
import { createInbox, Msg, NatsConnection, NatsError, Subscription } from 'nats';

interface Waiting {
  /** Nest's handling of a reply for this request: deserialize it and settle the call. */
  handle: (error: Error | undefined, msg: Msg) => Promise<unknown>;
  settle: (packet: WritePacket) => unknown;
}

/**
 * Nest's NATS client proxy with one reply subscription for all its requests, as nats.js's own
 * request() does, instead of Nest's one per request. Nest subscribes a fresh inbox before each
 * request and unsubscribes it after the reply: two more protocol operations for the server per
 * call, one of them a write of its own once the reply is in, on the path of every request the
 * gateway forwards. Here replies come to `<inbox>.<token>` under one wildcard subscription and
 * are handed to the waiting request by token. Packets, headers, serialization and the handling
 * of each reply are Nest's own (createSubscriptionHandler), so services see no difference.
 */
export class MuxedInboxClientNats extends ClientNats {
  private replies?: { connection: NatsConnection; prefix: string; subscription: Subscription };
  private readonly waiting = new Map<string, Waiting>();
  private nextToken = 0;

  protected override publish(partialPacket: ReadPacket, callback: (packet: WritePacket) => unknown): () => void {
    const token = (this.nextToken++).toString(36);
    try {
      const packet = this.assignPacketId(partialPacket);
      const serialized = this.serializer.serialize(packet);
      this.waiting.set(token, { handle: this.createSubscriptionHandler(packet, callback), settle: callback });
      (this.natsClient as NatsConnection).publish(this.normalizePattern(partialPacket.pattern), serialized.data, {
        reply: `${this.replyPrefix()}.${token}`,
        headers: this.mergeHeaders(serialized.headers),
      });
      return () => this.waiting.delete(token);
    } catch (err) {
      this.waiting.delete(token);
      callback({ err });
      return () => undefined;
    }
  }

  /** The reply subscription on the current connection, made on first use (and again after close() and a new connect()). */
  private replyPrefix(): string {
    const connection = this.natsClient as NatsConnection;
    if (this.replies?.connection !== connection) {
      const prefix = createInbox(this.options.inboxPrefix);
      const subscription = connection.subscribe(`${prefix}.*`, { callback: (err, msg) => this.route(err, msg) });
      this.replies = { connection, prefix, subscription };
    }
    return this.replies.prefix;
  }

  /** A reply goes to the request waiting on its token; a reply nobody waits for any more (it timed out) is dropped. */
  private route(err: NatsError | null, msg: Msg): void {
    // An error is the subscription's own (permissions, say): no reply will come for anyone.
    const waiting = err ? [...this.waiting.values()] : [this.waiting.get(msg.subject.slice(msg.subject.lastIndexOf('.') + 1))];
    for (const request of waiting) {
      // A reply that cannot be read (not Nest's packet) fails its call instead of going unhandled.
      request?.handle(err ?? undefined, msg).catch((error: Error) => request.settle({ err: error, isDisposed: true }));
    }
  }

  /** Requests still waiting are left to their timeouts, as with Nest's own client. */
  override async close(): Promise<void> {
    this.replies = undefined;
    this.waiting.clear();
    await super.close();
  }
}
