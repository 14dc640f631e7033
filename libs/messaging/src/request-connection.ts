import { Injectable } from '@nestjs/common';
import type { NatsConnection } from 'nats';
import { MessageBus } from './message-bus';

/**
 * The NATS connection this service's requests arrive on: the Nest microservice server's, not
 * the client connections of MessagingModule. The NATS server writes what it routes to one
 * connection in the order it routed it, and nats.js runs subscription callbacks in that order
 * as it parses, so a callback subscribed here runs before the handler of any request routed
 * after its message. Processes without a NATS server (workers) never get one.
 */
@Injectable()
export class RequestConnection {
  private connection?: NatsConnection;
  private readonly waiting: ((nc: NatsConnection) => void)[] = [];

  /** The server calls this once connected, before it subscribes its handlers. */
  attach(nc: NatsConnection): void {
    this.connection = nc;
    for (const use of this.waiting.splice(0)) use(nc);
  }

  /** Calls `use` with a bus on the connection once the server has it, at once if it already has. */
  whenConnected(use: (bus: MessageBus) => void): void {
    if (this.connection) use(new MessageBus(this.connection));
    else this.waiting.push((nc) => use(new MessageBus(nc)));
  }
}
