import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { TimeoutError } from 'rxjs';

/**
 * Turns whatever a NATS request failed with into a coded ServiceError. Services send coded
 * errors; the transport adds two of its own: nobody listening (503) and too slow (504).
 */
export function toServiceError(err: unknown, subject: string, timeoutMs: number): ServiceError {
  if (err instanceof ServiceError) return err;
  const coded = ServiceError.fromWire(err);
  if (coded) return coded;
  if (err instanceof TimeoutError) {
    return new ServiceError(ErrorCode.Timeout, `No reply from ${serviceOf(subject)} within ${timeoutMs} ms`);
  }
  const message = describe(err);
  if (/MAX_PAYLOAD_EXCEEDED/.test(message)) {
    return new ServiceError(ErrorCode.PayloadTooLarge, `The request is too large to pass on to ${serviceOf(subject)} (over the message bus limit)`);
  }
  if (/no responders|no subscribers|empty response/i.test(message)) {
    return new ServiceError(ErrorCode.Unavailable, `${serviceOf(subject)} is not running (no responders on ${subject})`, {
      retryAfterSeconds: 1,
    });
  }
  if (/connection|CONNECTION_REFUSED|ECONNREFUSED|closed|disconnect/i.test(message)) {
    return new ServiceError(ErrorCode.Unavailable, `Message bus unavailable: ${message}`, { retryAfterSeconds: 1 });
  }
  return new ServiceError(ErrorCode.Internal, `Request to ${subject} failed: ${message}`);
}

function serviceOf(subject: string): string {
  return `the ${subject.split('.')[0]} service`;
}

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.message}${'code' in err ? ` (${String(err.code)})` : ''}`;
  if (typeof err === 'object' && err !== null && 'message' in err) return String((err as { message: unknown }).message);
  return String(err);
}
