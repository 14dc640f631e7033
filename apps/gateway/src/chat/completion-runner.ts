import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  ChatCompletionParams,
  ErrorCode,
  InferenceEvent,
  QUEUE_FAILOVER_MS,
  ServiceError,
  StartCompletionReply,
  Subjects,
} from '@trainyard/contracts';
import { MessageBus, RpcClient } from '@trainyard/messaging';
import { GracefulShutdown, onAbort } from '@trainyard/runtime';
import type { Response } from 'express';
import type { Caller } from '../auth/caller';
import { GatewayConfig } from '../config/gateway.config';
import { CompletionEventsHub, CompletionInbox } from './completion-events.hub';
import { CompletionEventsReader } from './completion-events.reader';

/** What folds a completion's events into an answer: the pieces to stream that each event makes, and whether the last event has come. */
export interface EventFold<T> {
  apply(event: InferenceEvent): T[];
  readonly done: boolean;
}

/**
 * Feeds the events to `fold`, handing each piece it makes to `emit`, until it is done. Events
 * that end before it is done (the hub lost its subscription) are a 503, not a torn answer.
 */
export async function foldEvents<T>(events: AsyncIterable<InferenceEvent>, fold: EventFold<T>, emit: (piece: T) => void = () => undefined): Promise<void> {
  for await (const event of events) {
    for (const piece of fold.apply(event)) emit(piece);
    if (fold.done) return;
  }
  throw new ServiceError(ErrorCode.Unavailable, 'The completion ended without a result');
}

export interface CompletionStart {
  completionId: string;
  caller: Caller;
  params: ChatCompletionParams;
  /** Whether the caller asked for logprobs (true/false) or left it to the model's default (null). */
  logprobsRequested: boolean | null;
  /** The answer is stored for training: the worker reports its tokens and their logprobs whether or not they are shown. */
  recordTokens?: boolean;
}

/**
 * One completion on the chat machinery, for an HTTP answer of any shape: opens its inbox on
 * the events hub, asks the chat service to schedule it, and hands the worker's events over in
 * order. A client that goes away cancels the generation, and so does an error. However it
 * ends, chat is told the completion is over, so that its admission count frees the place. On
 * shutdown, a completion still running when the drain time is over fails with a 503 that says
 * to retry.
 */
@Injectable()
export class CompletionRunner {
  private readonly logger = new Logger(CompletionRunner.name);
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    private readonly bus: MessageBus,
    private readonly rpc: RpcClient,
    private readonly shutdown: GracefulShutdown,
    private readonly hub: CompletionEventsHub,
  ) {}

  /**
   * Runs `consume` over the completion's events; rejects with a ServiceError when the start is
   * refused, the worker fails, or `consume` throws (the generation cancelled then).
   */
  async run(
    start: CompletionStart,
    res: Response,
    consume: (started: StartCompletionReply, events: AsyncGenerator<InferenceEvent>) => Promise<void>,
  ): Promise<void> {
    const { completionId } = start;
    // Open first: the worker may answer before the start request returns.
    const inbox = this.hub.open(completionId);
    let finished = false;
    let announced = false;
    // Once per completion: chat frees its admission and, for one cut short, stops its generation.
    const end = (cancel: boolean) => {
      if (announced) return;
      announced = true;
      this.announceEnd(completionId, cancel);
    };
    const cancel = () => {
      inbox.close();
      if (finished) return;
      finished = true;
      this.logger.log(`${completionId}: the client went away; cancelling`);
      end(true);
    };
    res.on('close', cancel);
    try {
      // Chat may wait out a queue's failover before it answers (CompletionsService.start).
      const started = await this.rpc.request(
        Subjects.chat.startCompletion,
        {
          completion_id: completionId,
          entity_id: start.caller.entityId,
          entity_name: start.caller.entityName,
          logprobs_requested: start.logprobsRequested,
          ...(start.recordTokens ? { record_tokens: true } : {}),
          params: start.params,
          reply_subject: inbox.subject,
        },
        { timeoutMs: this.config.RPC_TIMEOUT_MS + QUEUE_FAILOVER_MS },
      );
      await consume(started, this.events(inbox));
      finished = true;
    } catch (err) {
      cancel();
      throw err;
    } finally {
      res.off('close', cancel);
      inbox.close();
      end(false);
    }
  }

  private announceEnd(completionId: string, cancel: boolean): void {
    try {
      this.bus.publish(Subjects.chat.completionEnded, { completion_id: completionId, ...(cancel ? { cancel } : {}) });
    } catch (err) {
      // The connection is closing: chat releases the admission once no worker holds the completion.
      this.logger.warn(`${completionId}: could not announce its end: ${(err as Error).message}`);
    }
  }

  /** Chat's answer to whether a worker still generates the completion; null when chat could not tell. */
  private async alive(completionId: string): Promise<boolean | null> {
    try {
      // Chat gives the worker a second to answer; the probe itself waits no longer than the silence that prompted it.
      const timeoutMs = Math.max(2_000, this.config.COMPLETION_PROBE_AFTER_MS);
      return (await this.rpc.request(Subjects.chat.completionLiveness, { completion_id: completionId }, { timeoutMs })).alive;
    } catch {
      return null;
    }
  }

  /** The worker's events in order; an `error` event, a silent, gone or lossy worker ends it with a ServiceError. */
  private async *events(inbox: CompletionInbox): AsyncGenerator<InferenceEvent> {
    const reader = new CompletionEventsReader((completionId) => this.alive(completionId), inbox, {
      idleTimeoutMs: this.config.COMPLETION_IDLE_TIMEOUT_MS,
      probeAfterMs: this.config.COMPLETION_PROBE_AFTER_MS,
    });
    const drain = this.drainOver();
    try {
      while (true) {
        const next = await Promise.race([reader.next(), drain.over]);
        if (next.done) return;
        const event = next.value;
        if (event.type === 'error') throw ServiceError.fromWire(event.error) ?? new ServiceError(ErrorCode.Internal, 'Generation failed');
        yield event;
      }
    } finally {
      drain.forget();
    }
  }

  /**
   * Rejects once the shutdown's drain time is over, for one completion to race its events
   * against. One per completion, let go when it ends: every race leaves a reaction on a promise
   * that never settles, holding the event that won it, for as long as that promise lives.
   */
  private drainOver(): { over: Promise<never>; forget: () => void } {
    const expired = this.shutdown.expired;
    let fail = (): void => undefined;
    const over = new Promise<never>((_, reject) => {
      fail = () => reject(new ServiceError(ErrorCode.Unavailable, 'The server is shutting down; retry the request', { retryAfterSeconds: 1 }));
    });
    over.catch(() => undefined);
    onAbort(expired, fail);
    return { over, forget: () => expired.removeEventListener('abort', fail) };
  }
}
