import { Logger } from '@nestjs/common';
import { NatsContext, NatsOptions, ServerNats } from '@nestjs/microservices';
import type { RequestConnection } from '@trainyard/messaging';
import type { NatsConnection, Subscription } from 'nats';
import type { GracefulShutdown } from './graceful-shutdown';

/** What Nest publishes for a request: the last packet is marked disposed, or carries the error. */
interface ReplyPacket {
  isDisposed?: boolean;
  err?: unknown;
}

/**
 * Nest's NATS server, able to stop taking requests while it finishes those it has: on
 * shutdown its subscriptions are drained (the server is told to stop routing here, and what
 * was already routed is still handled), every request is held until its reply is sent, and
 * the connection stays open for those replies. Nest's own close() would unsubscribe after
 * every module was already destroyed, and drop the replies still to come.
 */
export class DrainingNatsServer extends ServerNats {
  private readonly log = new Logger(DrainingNatsServer.name);
  private readonly subscribed: Subscription[] = [];
  /** The hold of each request being handled, by its message. */
  private readonly holding = new WeakMap<object, () => void>();

  constructor(
    private readonly natsOptions: Required<NatsOptions>['options'],
    private readonly shutdown: GracefulShutdown,
    /** Handed the connection before any handler is subscribed, for those that must read on it. */
    private readonly requests?: RequestConnection,
  ) {
    super(natsOptions);
  }

  /** As ServerNats.bindEvents, keeping the subscriptions so that they can be drained. */
  override bindEvents(client: NatsConnection): void {
    this.requests?.attach(client);
    const defaultQueue = this.getOptionsProp(this.natsOptions, 'queue');
    for (const [channel, handler] of this.messageHandlers) {
      const queue = (handler.extras?.['queue'] as string | undefined) ?? defaultQueue;
      this.subscribed.push(client.subscribe(channel, { queue, callback: this.getMessageHandler(channel).bind(this) }));
    }
  }

  /**
   * Holds each request until its last reply packet is published. Nest runs the handler only
   * when it subscribes to the reply (with interceptors, after handleMessage has returned), so
   * the end of handleMessage is not the end of the work.
   */
  override async handleMessage(channel: string, natsMsg: { reply?: string }): Promise<unknown> {
    const release = this.shutdown.hold();
    this.holding.set(natsMsg, release);
    try {
      return await super.handleMessage(channel, natsMsg);
    } catch (err) {
      release();
      throw err;
    } finally {
      // Nothing to reply to (an event): the work is done here.
      if (!natsMsg.reply) release();
    }
  }

  override getPublisher(natsMsg: object, id: string, ctx: NatsContext): (response: ReplyPacket) => unknown {
    const publish = super.getPublisher(natsMsg, id, ctx) as (response: ReplyPacket) => unknown;
    const release = this.holding.get(natsMsg);
    return (response) => {
      try {
        return publish(response);
      } finally {
        if (response.isDisposed || response.err !== undefined) release?.();
      }
    };
  }

  /** Takes no more requests; resolves once those already routed here have been handed to their handlers. */
  async stopIntake(): Promise<void> {
    await Promise.all(
      this.subscribed.splice(0).map((sub) => sub.drain().catch((err: Error) => this.log.warn(`could not drain ${sub.getSubject()}: ${err.message}`))),
    );
  }

  /** Sends the replies still buffered before Nest closes the connection. */
  override async close(): Promise<void> {
    let connection: NatsConnection | undefined;
    try {
      connection = this.unwrap<NatsConnection>();
    } catch {
      // Never connected: nothing to flush.
    }
    if (connection && !connection.isClosed()) await connection.flush().catch(() => undefined);
    await super.close();
  }
}
