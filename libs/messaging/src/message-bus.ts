import { Empty, EventSubject, resolveWorkQueue, RpcSubject, WorkQueueSpec } from '@trainyard/contracts';
import { connect, ConnectionOptions, ErrorCode, JsMsg, MsgRequest, NatsConnection, NatsError, RequestStrategy, StoredMsg, Subscription } from 'nats';
import { decodeMessage, encodeMessage } from './codec';
import { ensureWorkQueue, isJetStreamUnavailable, WorkQueueSettings, workQueueDepth } from './jetstream';
import { TokenRoutedSubscription } from './token-routed.subscription';

/** A subscription made through the bus; unsubscribing after the connection closed is a no-op. */
export interface EventSubscription {
  unsubscribe(): void;
}

export interface SubscribeOptions {
  /** Listens on `${subject.name}.${suffix}` (the events of one job, of one queue). */
  suffix?: string;
  /** Queue group: each message goes to one subscriber of the group. Without one, every subscriber gets every message. */
  queue?: string;
  /** The subscription failed (a permissions error, say): nothing more comes. */
  onError?: (err: Error) => void;
  /** A message that is not JSON; without this it is dropped. */
  onUndecodable?: (err: Error) => void;
}

/** A work-queue message held by its worker until it acks or naks it (or the queue's ack wait runs out). */
export interface WorkMessage<T> {
  /** Decoded on first read; throws when the message is not JSON. */
  readonly payload: T;
  /** JetStream delivered it before (the previous holder died or handed it back). */
  readonly redelivered: boolean;
  /** Deliveries so far, this one included (1 the first time). */
  readonly redeliveryCount: number;
  /** The message's sequence in its stream: the same on every delivery of it, different for every other message. */
  readonly sequence: number;
  /** Done with: removed from the queue. */
  ack(): void;
  /** Handed back for redelivery, at once or after `delayMs`. */
  nak(delayMs?: number): void;
  /** Still being worked on: restarts the ack wait. */
  working(): void;
}

/** Pulls a work queue's messages one at a time, for workers that take work only when they have room. */
export interface WorkQueueReader<T> {
  /** The next message, or null when none came within `expiresMs` (at least 1 000: JetStream's minimum). */
  next(expiresMs: number): Promise<WorkMessage<T> | null>;
}

/** What the connection went through, as `connectionChanges()` reports it. */
export type ConnectionChange = 'disconnect' | 'reconnect';

/** Nobody subscribes to the subject at all (scatter-gather with no listener). */
export class NoResponders extends Error {
  constructor(subject: string) {
    super(`no responders on ${subject}`);
    this.name = 'NoResponders';
  }
}

/**
 * Everything the apps send and receive on NATS outside Nest's request/reply (RpcClient), typed by
 * the contracts' subjects and work queues so that sender and receiver share one declaration:
 * events (`publish` / `subscribe`), work queues (`enqueue` / `consume`), liveness probes, and
 * scatter-gather. Work-queue names take the deployment's stream prefix.
 */
export class MessageBus {
  constructor(
    private readonly nc: NatsConnection,
    /** Prefix for JetStream stream names and work subjects ('' in production). */
    readonly streamPrefix = '',
  ) {}

  /** A bus on a connection of its own (tests, tools); close it when done. */
  static async connect(options: ConnectionOptions & { streamPrefix?: string }): Promise<MessageBus> {
    const { streamPrefix, ...connection } = options;
    return new MessageBus(await connect(connection), streamPrefix);
  }

  /** The same connection, with another deployment's work queues (tests sharing one nats-server). */
  withStreamPrefix(streamPrefix: string): MessageBus {
    return new MessageBus(this.nc, streamPrefix);
  }

  async close(): Promise<void> {
    if (!this.nc.isClosed()) await this.nc.close();
  }

  isClosed(): boolean {
    return this.nc.isClosed();
  }

  /** Resolves once the server has processed everything sent before (a PING answered after it). */
  flush(): Promise<void> {
    return this.nc.flush();
  }

  /** Round trip to the server, in milliseconds. */
  rtt(): Promise<number> {
    return this.nc.rtt();
  }

  /** Disconnections and reconnections of the connection, as they happen, until it closes. */
  async *connectionChanges(): AsyncIterable<ConnectionChange> {
    for await (const status of this.nc.status()) {
      if (status.type === 'disconnect' || status.type === 'reconnect') yield status.type;
    }
  }

  /** Core NATS publish: fire and forget. Throws when the connection is closed. */
  publish<T>(subject: EventSubject<T>, payload: T, options: { suffix?: string } = {}): void {
    this.nc.publish(address(subject.name, options.suffix), encodeMessage(payload));
  }

  /** Publishes on a subject of `subject`'s family given in full (a reply subject a work item carries). */
  publishTo<T>(_subject: EventSubject<T>, to: string, payload: T): void {
    this.nc.publish(to, encodeMessage(payload));
  }

  /**
   * Calls `handler` with each message, in the callback that parses it (before anything read
   * after it on this connection is handled).
   */
  subscribe<T>(subject: EventSubject<T>, handler: (payload: T) => void, options: SubscribeOptions = {}): EventSubscription {
    const sub = this.nc.subscribe(address(subject.name, options.suffix), {
      ...(options.queue ? { queue: options.queue } : {}),
      callback: (err, msg) => {
        if (err) {
          options.onError?.(err);
          return;
        }
        let payload: T;
        try {
          payload = decodeMessage<T>(msg.data);
        } catch (e) {
          options.onUndecodable?.(e as Error);
          return;
        }
        handler(payload);
      },
    });
    return this.guarded(sub);
  }

  /**
   * Asks whoever answers `${subject.name}.${suffix}` (the holder of a completion, say): true
   * when someone answered, false when nobody listens there, null when no answer came within
   * `timeoutMs` (a busy holder, a reconnecting bus).
   */
  async probe(subject: RpcSubject<Empty, Empty>, options: { suffix: string; timeoutMs: number }): Promise<boolean | null> {
    try {
      await this.nc.request(address(subject.name, options.suffix), undefined, { timeout: options.timeoutMs });
      return true;
    } catch (err) {
      return err instanceof NatsError && err.code === ErrorCode.NoResponders ? false : null;
    }
  }

  /** Answers `probe`s of `${subject.name}.${suffix}` until unsubscribed. */
  answerProbes(subject: RpcSubject<Empty, Empty>, options: { suffix: string }): EventSubscription {
    return this.guarded(this.nc.subscribe(address(subject.name, options.suffix), { callback: (err, msg) => err || msg.respond() }));
  }

  /**
   * Answers `subject`'s requests with `handler`'s reply: every subscriber answers (scatter-gather,
   * as `gather` asks), unless `queue` names a group. A request with no body reads as `{}`; one
   * that is not JSON, or whose handler fails, gets no answer.
   */
  respond<Req, Res>(subject: RpcSubject<Req, Res>, handler: (request: Req) => Res | Promise<Res>, options: { queue?: string } = {}): EventSubscription {
    const sub = this.nc.subscribe(subject.name, {
      ...(options.queue ? { queue: options.queue } : {}),
      callback: (err, msg) => {
        if (err) return;
        let request: Req;
        try {
          request = msg.data.length === 0 ? ({} as Req) : decodeMessage<Req>(msg.data);
        } catch {
          return;
        }
        // A handler that fails answers nothing: the asker sees it as silence.
        void Promise.resolve()
          .then(() => handler(request))
          .then((reply) => msg.respond(encodeMessage(reply)))
          .catch(() => undefined);
      },
    });
    return this.guarded(sub);
  }

  /**
   * Scatter-gather: sends `request` to every subscriber (no queue group) and collects the
   * replies until `jitterMs` passes without one or `maxWaitMs` is over. Throws NoResponders
   * when nobody subscribes at all.
   */
  async gather<Req, Res>(subject: RpcSubject<Req, Res>, request: Req, options: { maxWaitMs: number; jitterMs: number }): Promise<Res[]> {
    let replies: AsyncIterable<{ data: Uint8Array }>;
    try {
      replies = await this.nc.requestMany(subject.name, encodeMessage(request), {
        strategy: RequestStrategy.JitterTimer,
        jitter: options.jitterMs,
        maxWait: options.maxWaitMs,
      });
    } catch (err) {
      if (err instanceof NatsError && err.code === ErrorCode.NoResponders) throw new NoResponders(subject.name);
      throw err;
    }
    const answers: Res[] = [];
    try {
      for await (const reply of replies) answers.push(decodeMessage<Res>(reply.data));
    } catch (err) {
      if (err instanceof NatsError && err.code === ErrorCode.NoResponders) throw new NoResponders(subject.name);
      throw err;
    }
    return answers;
  }

  /**
   * Adds a message to a JetStream work queue; resolves once the stream stored it. With `id`,
   * a message already stored under that id within the stream's dedupe window is not stored again.
   *
   * With `id` and `failoverMs`, a stream that cannot answer (no leader while a cluster elects
   * one, or no reply in time) is asked again every QUEUE_RETRY_MS until `failoverMs` has passed:
   * the id makes the retries safe, since a publish that was stored but not acknowledged is
   * stored once.
   */
  async enqueue<T>(queue: WorkQueueSpec<T>, payload: T, options: { id?: string; failoverMs?: number } = {}): Promise<void> {
    const spec = resolveWorkQueue(queue, this.streamPrefix);
    const data = encodeMessage(payload);
    const giveUpAt = Date.now() + (options.id ? (options.failoverMs ?? 0) : 0);
    for (;;) {
      try {
        await this.nc.jetstream().publish(spec.subject, data, options.id ? { msgID: options.id } : undefined);
        return;
      } catch (err) {
        if (!isJetStreamUnavailable(err) || Date.now() + QUEUE_RETRY_MS > giveUpAt) throw err;
        await new Promise((resolve) => setTimeout(resolve, QUEUE_RETRY_MS));
      }
    }
  }

  /** The queue's shared durable consumer (ensureWorkQueue made it), to pull messages from. */
  async consume<T>(queue: WorkQueueSpec<T>): Promise<WorkQueueReader<T>> {
    const spec = resolveWorkQueue(queue, this.streamPrefix);
    const consumer = await this.nc.jetstream().consumers.get(spec.stream, spec.consumer);
    return {
      next: async (expiresMs) => {
        const message = await consumer.next({ expires: expiresMs });
        return message ? workMessage<T>(message) : null;
      },
    };
  }

  /** Creates the queue's stream and shared consumer, or brings them up to date (see ensureWorkQueue). */
  async ensureWorkQueue(queue: WorkQueueSpec, settings: Partial<WorkQueueSettings> = {}): Promise<void> {
    await ensureWorkQueue(this.nc, queue, this.streamPrefix, settings);
  }

  /**
   * The payload of every message the queue's stream holds: waiting for a worker, held by one, or
   * handed back and waiting for redelivery. A work queue's stream drops a message when it is
   * acknowledged, so work missing here is work no worker will ever be given.
   */
  async queuedPayloads<T>(queue: WorkQueueSpec<T>): Promise<T[]> {
    const spec = resolveWorkQueue(queue, this.streamPrefix);
    const jsm = await this.nc.jetstreamManager();
    const payloads: T[] = [];
    for (let seq = 1; ; ) {
      let message: StoredMsg;
      try {
        // The first message at or after `seq` (the server's next_by_subj, which nats.js's MsgRequest type omits).
        message = await jsm.streams.getMessage(spec.stream, { seq, next_by_subj: spec.subject } as unknown as MsgRequest);
      } catch (err) {
        // JetStream's "no message found": past the last one. (A missing stream is an error.)
        if (err instanceof NatsError && err.api_error?.err_code === NO_MESSAGE_FOUND) return payloads;
        throw err;
      }
      payloads.push(decodeMessage<T>(message.data));
      seq = message.seq + 1;
    }
  }

  /** Messages waiting in the queue; fails when the queue does not exist. */
  queueDepth(queue: WorkQueueSpec): Promise<number> {
    return workQueueDepth(this.nc, queue, this.streamPrefix);
  }

  /**
   * Calls `handler` with each message JetStream gives up on (its deliveries reached the
   * consumer's maximum, from its max-deliveries advisory), then removes the message from the
   * stream. A handler that fails leaves the message where it is; `onError` is told.
   */
  onGivenUp<T>(
    queue: WorkQueueSpec<T>,
    handler: (payload: T, deliveries: number) => Promise<void>,
    options: { queue?: string; onError?: (err: Error, streamSeq: number) => void } = {},
  ): EventSubscription {
    const spec = resolveWorkQueue(queue, this.streamPrefix);
    const advisories: EventSubject<MaxDeliveriesAdvisory> = { name: `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${spec.stream}.${spec.consumer}` };
    return this.subscribe(
      advisories,
      (advisory) => {
        const giveUp = async () => {
          const jsm = await this.nc.jetstreamManager();
          const message = await jsm.streams.getMessage(spec.stream, { seq: advisory.stream_seq });
          await handler(decodeMessage<T>(message.data), advisory.deliveries);
          await jsm.streams.deleteMessage(spec.stream, advisory.stream_seq).catch(() => undefined);
        };
        giveUp().catch((err: Error) => options.onError?.(err, advisory.stream_seq));
      },
      { queue: options.queue },
    );
  }

  /** One wildcard subscription, `${prefix}.*`, routing each message by its subject's last token. */
  routeByToken(prefix: string): TokenRoutedSubscription {
    return new TokenRoutedSubscription(this.nc, prefix);
  }

  private guarded(sub: Subscription): EventSubscription {
    return {
      unsubscribe: () => {
        if (!this.nc.isClosed()) sub.unsubscribe();
      },
    };
  }
}

/** JetStream API error code of a message get that found none. */
const NO_MESSAGE_FOUND = 10037;

/** Pause between attempts to queue a message on a stream that cannot answer (see enqueue). */
const QUEUE_RETRY_MS = 250;

/** JetStream's advisory when a consumer stops redelivering a message. */
interface MaxDeliveriesAdvisory {
  stream: string;
  consumer: string;
  stream_seq: number;
  deliveries: number;
}

function address(name: string, suffix: string | undefined): string {
  return suffix === undefined ? name : `${name}.${suffix}`;
}

function workMessage<T>(message: JsMsg): WorkMessage<T> {
  let decoded: { payload: T } | undefined;
  return {
    get payload() {
      decoded ??= { payload: decodeMessage<T>(message.data) };
      return decoded.payload;
    },
    get redelivered() {
      return message.redelivered;
    },
    get redeliveryCount() {
      return message.info.redeliveryCount;
    },
    get sequence() {
      return message.seq;
    },
    ack: () => message.ack(),
    nak: (delayMs) => message.nak(delayMs),
    working: () => message.working(),
  };
}
