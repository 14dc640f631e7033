import { ClientNats, ReadPacket, WritePacket } from '@nestjs/microservices';
import { createInbox, NatsConnection } from 'nats';
import { TokenRoutedSubscription } from './token-routed.subscription';

/**
 * Nest's NATS client proxy with one reply subscription for all its requests, as nats.js's own
 * request() does, instead of Nest's one per request. Nest subscribes a fresh inbox before each
 * request and unsubscribes it after the reply: two more protocol operations for the server per
 * call, one of them a write of its own once the reply is in, on the path of every request the
 * gateway forwards. Here replies come to `<inbox>.<token>` (a TokenRoutedSubscription) and are
 * handed to the waiting request by token. Packets, headers, serialization and the handling of
 * each reply are Nest's own (createSubscriptionHandler), so services see no difference.
 */
export class MuxedInboxClientNats extends ClientNats {
  private replies?: { connection: NatsConnection; routes: TokenRoutedSubscription };
  private nextToken = 0;

  protected override publish(partialPacket: ReadPacket, callback: (packet: WritePacket) => unknown): () => void {
    let stopWaiting = (): void => undefined;
    try {
      const packet = this.assignPacketId(partialPacket);
      const serialized = this.serializer.serialize(packet);
      const routes = this.replyRoutes();
      const token = (this.nextToken++).toString(36);
      // Nest's handling of a reply for this request: deserialize it and settle the call.
      const handle = this.createSubscriptionHandler(packet, callback);
      // A reply that cannot be read (not Nest's packet) fails its call instead of going unhandled.
      const settle = (reply: Promise<unknown>) => reply.catch((error: Error) => callback({ err: error, isDisposed: true }));
      stopWaiting = routes.add(token, {
        message: (msg) => settle(handle(undefined, msg)),
        // Closed: the request is left to its timeout, as with Nest's own client. Failed: no reply will come.
        ended: (err) => err && settle(handle(err, {})),
      });
      (this.natsClient as NatsConnection).publish(this.normalizePattern(partialPacket.pattern), serialized.data, {
        reply: routes.subject(token),
        headers: this.mergeHeaders(serialized.headers),
      });
      return stopWaiting;
    } catch (err) {
      stopWaiting();
      callback({ err });
      return () => undefined;
    }
  }

  /** The reply subscription on the current connection, made on first use (and again after close() and a new connect()). */
  private replyRoutes(): TokenRoutedSubscription {
    const connection = this.natsClient as NatsConnection;
    if (this.replies?.connection !== connection) {
      this.replies = { connection, routes: new TokenRoutedSubscription(connection, createInbox(this.options.inboxPrefix)) };
    }
    return this.replies.routes;
  }

  override async close(): Promise<void> {
    this.replies?.routes.close();
    this.replies = undefined;
    await super.close();
  }
}
