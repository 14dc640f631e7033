import { ErrorCode } from '@trainyard/contracts';

/** The one table from error code to HTTP status. */
export const HTTP_STATUS_BY_CODE: Record<ErrorCode, number> = {
  [ErrorCode.InvalidRequest]: 400,
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

/** OpenAI's `error.type` for a status, as the SDKs expect. */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** The SDKs retry what is worth retrying and honour this header when present. */
export function shouldRetry(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}
