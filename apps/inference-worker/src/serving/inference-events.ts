import { ErrorCode, InferenceEvent } from '@trainyard/contracts';
import type { GrammarError } from '@trainyard/engine';
import { grammarRefusal } from './engine-inputs';

export type ErrorEvent = InferenceEvent & { type: 'error' };

/** The error event a completion's client sees: a coded error, with the request parameter at fault when there is one. */
export function errorEvent(code: ErrorCode, message: string, param?: string): ErrorEvent {
  return { type: 'error', error: { code, message, details: param ? { param } : {} } };
}

/** A grammar the request made that cannot be decoded: the client's request is at fault. */
export function grammarErrorEvent(err: GrammarError): ErrorEvent {
  const { message, param } = grammarRefusal(err);
  return errorEvent(ErrorCode.InvalidRequest, message, param);
}
