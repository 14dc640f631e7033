import { Injectable, Logger } from '@nestjs/common';
import { CallerScope, Page, Subjects, TERMINAL_EVENT_TYPES, TrainingEventRecord } from '@trainyard/contracts';
import { MessageBus, RpcClient } from '@trainyard/messaging';
import { GracefulShutdown, onAbort } from '@trainyard/runtime';
import type { Response } from 'express';
import { openEventStream } from '../http/event-stream';

/** Without a wake-up (a missed NATS message), look again this often anyway. */
const POLL_MS = 2_000;
const KEEPALIVE_MS = 15_000;

/**
 * The Server-Sent Events form of GET .../events: every stored event, oldest first, from the
 * cursor on (Last-Event-ID or ?after), pushed as the orchestrator stores them, until the
 * job's final event. The database stays the source of truth: a NATS notice only says "look
 * now", so an event can be late but never lost or repeated. On shutdown every stream ends at
 * once, after the events already written: the client resumes from Last-Event-ID elsewhere.
 */
@Injectable()
export class JobEventsStream {
  private readonly logger = new Logger(JobEventsStream.name);
  /** How to end each open stream early. */
  private readonly open = new Set<() => void>();

  constructor(
    private readonly rpc: RpcClient,
    private readonly bus: MessageBus,
    private readonly shutdown: GracefulShutdown,
  ) {
    onAbort(shutdown.stopping, () => {
      for (const end of this.open) end();
    });
  }

  /** `first` was fetched before the response was committed, so that a 404 is still a plain 404. */
  async relay(scope: CallerScope, jobId: string, after: string | undefined, first: Page<TrainingEventRecord>, res: Response): Promise<void> {
    openEventStream(res);

    // The client went away, or the server is shutting down: either way, stop here.
    let closed = this.shutdown.stopping.aborted;
    let wake: (() => void) | undefined;
    const notices = this.bus.subscribe(Subjects.training.eventsAppended, () => wake?.(), { suffix: jobId, onError: () => wake?.() });
    const end = () => {
      closed = true;
      wake?.();
    };
    res.on('close', end);
    this.open.add(end);
    const keepalive = setInterval(() => res.write(': keep-alive\n\n'), KEEPALIVE_MS);
    try {
      let page = first;
      let cursor = after;
      for (;;) {
        for (const event of page.data) {
          res.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
          cursor = event.id;
          if ((TERMINAL_EVENT_TYPES as readonly string[]).includes(event.type)) return;
        }
        if (closed) return;
        if (!page.has_more) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, POLL_MS);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
          if (closed) return;
        }
        page = await this.rpc.request(Subjects.training.listEvents, { ...scope, job_id: jobId, after: cursor, limit: 100 });
      }
    } catch (err) {
      this.logger.warn(`event stream of job ${jobId} ended: ${(err as Error).message}`);
      if (!closed) res.write(`event: error\ndata: ${JSON.stringify({ error: { message: (err as Error).message } })}\n\n`);
    } finally {
      this.open.delete(end);
      clearInterval(keepalive);
      notices.unsubscribe();
      res.end();
    }
  }
}
