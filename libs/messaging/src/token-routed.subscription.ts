import { Msg, NatsConnection, NatsError, Subscription } from 'nats';

/** What one conversation on a TokenRoutedSubscription is told. */
export interface TokenRoute {
  /** A message whose subject ends in this route's token. */
  message(msg: Msg): void;
  /** Nothing more will come: the subscription was closed, or failed with `err` (a permissions error, say). */
  ended(err?: NatsError): void;
}

/**
 * One wildcard subscription, `<prefix>.*`, serving many short conversations at once (the
 * replies of RPCs, the events of completions): each message goes to the route registered under
 * its subject's last token, and is dropped when no route holds that token any more. Nothing is
 * subscribed or unsubscribed per conversation, so nats-server sees no SUB and UNSUB for each.
 */
export class TokenRoutedSubscription {
  private readonly routes = new Map<string, TokenRoute>();
  private readonly subscription: Subscription;

  constructor(
    private readonly nc: NatsConnection,
    readonly prefix: string,
  ) {
    this.subscription = nc.subscribe(`${prefix}.*`, {
      callback: (err, msg) => {
        if (err) this.endAll(err);
        else this.routes.get(msg.subject.slice(prefix.length + 1))?.message(msg);
      },
    });
  }

  /** The subject whose messages go to `token`'s route. */
  subject(token: string): string {
    return `${this.prefix}.${token}`;
  }

  /** Sends `token`'s messages to `route` until the returned function is called. */
  add(token: string, route: TokenRoute): () => void {
    this.routes.set(token, route);
    return () => {
      if (this.routes.get(token) === route) this.routes.delete(token);
    };
  }

  /** Conversations currently routed. */
  get size(): number {
    return this.routes.size;
  }

  /** Ends every route and the subscription. */
  close(): void {
    this.endAll();
    if (!this.nc.isClosed()) this.subscription.unsubscribe();
  }

  private endAll(err?: NatsError): void {
    const routes = [...this.routes.values()];
    this.routes.clear();
    for (const route of routes) route.ended(err);
  }
}
