import { ErrorCode, InferenceEvent, InferenceEventMessage, ServiceError } from '@trainyard/contracts';
import { decodeMessage } from '@trainyard/messaging';
import { settledWithin } from '@trainyard/runtime';
import type { CompletionInbox } from './completion-events.hub';

/**
 * Asks whether a worker still generates the completion: true, false (its worker is gone), or
 * null when that could not be told (no answer in time, chat itself unreachable).
 */
export type LivenessProbe = (completionId: string) => Promise<boolean | null>;

/** How long events already on their way are waited for once the worker is known to be gone. */
const LATE_EVENTS_GRACE_MS = 500;

export interface CompletionEventsOptions {
  /** Silence after which the completion fails with 504, whatever the cause. */
  idleTimeoutMs: number;
  /** Silence after which the worker holding the completion is asked whether it still is. */
  probeAfterMs: number;
}

/**
 * Reads one completion's events off its inbox, in order, and turns the ways a
 * completion can be lost into clear errors instead of a wait: its worker died after taking
 * it (chat finds no worker holding it: 503), an event went missing in transit (a gap
 * in the numbering: 503), or nothing came for the idle timeout (504). Silence alone proves
 * nothing (a long prefill, a bus reconnecting), so only those proofs end it early.
 */
export class CompletionEventsReader {
  private accepted = false;
  private expectedSeq = 0;

  constructor(
    private readonly probeLiveness: LivenessProbe,
    private readonly inbox: CompletionInbox,
    private readonly options: CompletionEventsOptions,
  ) {}

  /** The next event for the response (bookkeeping events are consumed here); done when the inbox is closed. */
  async next(): Promise<IteratorResult<InferenceEvent, undefined>> {
    for (;;) {
      const received = await this.receive();
      if (received.done) return { done: true, value: undefined };
      const { seq, ...event } = decodeMessage<InferenceEventMessage>(received.value);
      // Workers older than the numbering send none and answer no probes: nothing to check then.
      if (typeof seq === 'number') {
        if (seq !== this.expectedSeq) {
          throw new ServiceError(
            ErrorCode.Unavailable,
            `Part of the completion was lost in transit (event ${this.expectedSeq} never arrived); retry the request`,
            { retryAfterSeconds: 1 },
          );
        }
        this.expectedSeq++;
        this.accepted = true;
      }
      if (event.type === 'accepted') continue;
      return { done: false, value: event as InferenceEvent };
    }
  }

  /** Waits for the next message, probing the worker at every `probeAfterMs` of silence once it took the completion. */
  private async receive(): Promise<IteratorResult<Uint8Array, undefined>> {
    const next = this.inbox.next();
    const silentSince = Date.now();
    for (;;) {
      const silent = Date.now() - silentSince;
      if (silent >= this.options.idleTimeoutMs) {
        throw new ServiceError(ErrorCode.Timeout, `The inference worker sent nothing for ${this.options.idleTimeoutMs} ms`);
      }
      const received = await settledWithin(next, Math.min(this.options.probeAfterMs, this.options.idleTimeoutMs - silent));
      if (received) return received;
      if (this.accepted && (await this.workerGone())) {
        // A worker that finished lets go of the completion right after sending its last events,
        // so they can reach the inbox while the probe is out: they are the answer, not a loss.
        const late = await settledWithin(next, LATE_EVENTS_GRACE_MS);
        if (late) return late;
        throw new ServiceError(ErrorCode.Unavailable, 'The inference worker generating this completion stopped before it finished; retry the request', {
          retryAfterSeconds: 1,
        });
      }
    }
  }

  /** Unknown (a slow answer, a reconnecting bus, chat restarting) is not gone: keep waiting, within the idle timeout. */
  private async workerGone(): Promise<boolean> {
    return (await this.probeLiveness(this.inbox.completionId)) === false;
  }

}
