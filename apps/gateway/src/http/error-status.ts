import { ErrorCode, ServiceError } from '@trainyard/contracts';

/** The one table from error code to HTTP status. */
export const HTTP_STATUS_BY_CODE: Record<ErrorCode, number> = {
  [ErrorCode.InvalidRequest]: 400,
  [ErrorCode.ContextLengthExceeded]: 400,
  [ErrorCode.Unauthorized]: 401,
  [ErrorCode.Forbidden]: 403,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.ModelNotFound]: 404,
  [ErrorCode.Conflict]: 409,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.ValidationFailed]: 422,
  [ErrorCode.RateLimited]: 429,
  [ErrorCode.Internal]: 500,
  [ErrorCode.Unavailable]: 503,
  [ErrorCode.Timeout]: 504,
};

/**
 * The status an error is answered with. An invalid body on an OpenAI route is a 400, as OpenAI
 * answers it (the SDKs raise BadRequestError); the preview routes keep FastAPI's 422.
 */
export function httpStatus(code: ErrorCode, openAiRoute: boolean): number {
  return openAiRoute && code === ErrorCode.ValidationFailed ? 400 : HTTP_STATUS_BY_CODE[code];
}

/** OpenAI's `error.type` for a status, as the SDKs expect. */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/**
 * `x-should-retry`, which the SDKs honour over their own rule (they would retry every 409 and
 * 5xx): true only where the same request can succeed later. Overload, an outage, a timeout, or
 * an error that says how long to wait (a request with the same Idempotency-Key in progress);
 * not a conflict that stays (a name taken) nor a 500, which is a bug the same request meets again.
 */
export function shouldRetry(error: ServiceError, status: number): boolean {
  return status === 408 || status === 429 || status === 503 || status === 504 || error.details.retryAfterSeconds !== undefined;
}
