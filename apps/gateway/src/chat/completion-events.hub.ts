import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { MessageBus, TokenRoutedSubscription } from '@trainyard/messaging';
import { randomUUID } from 'node:crypto';

/**
 * The events of one completion, in the order they arrived, as raw messages: pushed by the
 * hub, read by one reader at a time (one `next()` outstanding). Ends when closed, or when the
 * hub loses its subscription.
 */
export class CompletionInbox implements AsyncIterator<Uint8Array, undefined> {
  private readonly buffered: Uint8Array[] = [];
  private waiting?: (result: IteratorResult<Uint8Array, undefined>) => void;
  private ended = false;

  constructor(
    readonly completionId: string,
    /** Where the worker publishes this completion's events. */
    readonly subject: string,
    private readonly onClose: () => void = () => undefined,
  ) {}

  push(data: Uint8Array): void {
    if (this.ended) return;
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) waiting({ done: false, value: data });
    else this.buffered.push(data);
  }

  next(): Promise<IteratorResult<Uint8Array, undefined>> {
    const value = this.buffered.shift();
    if (value) return Promise.resolve({ done: false, value });
    if (this.ended) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => (this.waiting = resolve));
  }

  /** Ends the inbox: what was not read yet is dropped, and events that still come are ignored. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.buffered.length = 0;
    this.onClose();
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.({ done: true, value: undefined });
  }
}

/**
 * One NATS subscription per gateway process for the events of every completion it relays,
 * `${Subjects.chat.completionEvents.name}.<this process>.*` (a TokenRoutedSubscription), made and
 * confirmed by a flush before the gateway takes requests; each message goes to the inbox of
 * the completion its subject's last token names, and is dropped when that completion is no
 * longer open. Against a subscription per completion: nothing to subscribe and unsubscribe for
 * each request, and no window in which a worker could publish before nats-server knows the
 * subscription (the request to chat that leads to those events travels on another connection).
 */
@Injectable()
export class CompletionEventsHub implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(CompletionEventsHub.name);
  private events?: TokenRoutedSubscription;

  constructor(private readonly bus: MessageBus) {}

  async onModuleInit(): Promise<void> {
    this.events = this.bus.routeByToken(`${Subjects.chat.completionEvents.name}.${randomUUID()}`);
    await this.bus.flush();
  }

  onModuleDestroy(): void {
    this.events?.close();
  }

  /** Starts collecting a completion's events; close the inbox when done with it. */
  open(completionId: string): CompletionInbox {
    const events = this.started();
    const inbox: CompletionInbox = new CompletionInbox(completionId, events.subject(completionId), () => stopRouting());
    const stopRouting = events.add(completionId, {
      message: (msg) => inbox.push(msg.data),
      ended: (err) => {
        // The subscription is gone (a permissions error, say): the completion ends, and says so.
        if (err) this.logger.error(`completion events subscription failed, ending ${completionId}: ${err.message}`);
        inbox.close();
      },
    });
    return inbox;
  }

  /** Completions whose events are being collected (for tests and metrics). */
  get openCount(): number {
    return this.events?.size ?? 0;
  }

  private started(): TokenRoutedSubscription {
    if (!this.events) throw new Error('CompletionEventsHub used before onModuleInit');
    return this.events;
  }
}
