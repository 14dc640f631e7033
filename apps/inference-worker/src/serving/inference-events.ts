import { ErrorCode, InferenceEvent } from '@trainyard/contracts';
import { GpuFault, type GrammarError } from '@trainyard/engine';
import { grammarRefusal } from './engine-inputs';

export type ErrorEvent = InferenceEvent & { type: 'error' };

/** The error event a completion's client sees: a coded error, with the request parameter at fault when there is one. */
export function errorEvent(code: ErrorCode, message: string, param?: string): ErrorEvent {
  return { type: 'error', error: { code, message, details: param ? { param } : {} } };
}

/**
 * What a completion whose prefill or decoding step failed is told: the GPU running out of memory
 * is the server's capacity, which a retry (or a shorter prompt, or fewer choices) may find; a
 * lost GPU device takes the worker down to be restarted (main.ts), and a retry finds another
 * worker or the restarted one; anything else is a failure of the worker.
 */
export function generationFailedEvent(err: unknown): ErrorEvent {
  if (err instanceof GpuFault && err.kind === 'out-of-memory') {
    return unavailable('The GPU ran out of memory for this completion; retry it, or send a shorter prompt or fewer choices', 1);
  }
  if (err instanceof GpuFault && err.kind === 'lost') {
    return unavailable('The inference worker lost its GPU and is restarting; retry the completion', 5);
  }
  return errorEvent(ErrorCode.Internal, 'Generation failed on the inference worker');
}

function unavailable(message: string, retryAfterSeconds: number): ErrorEvent {
  return { type: 'error', error: { code: ErrorCode.Unavailable, message, details: { retryAfterSeconds } } };
}

/** A grammar the request made that cannot be decoded: the client's request is at fault. */
export function grammarErrorEvent(err: GrammarError): ErrorEvent {
  const { message, param } = grammarRefusal(err);
  return errorEvent(ErrorCode.InvalidRequest, message, param);
}
