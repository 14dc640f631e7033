import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { ErrorCode, REQUEST_ID_HEADER, ServiceError } from '@trainyard/contracts';
import { databaseUnavailable } from '@trainyard/db';
import type { Request, Response } from 'express';
import { HTTP_STATUS_BY_CODE, httpStatus, openAiErrorType, shouldRetry } from './error-status';
import { isOpenAiRoute } from './route-family';

/**
 * The only place that turns errors into HTTP. Services, guards, pipes and the body-parser
 * translation throw coded ServiceErrors; Nest throws HttpExceptions (unknown route),
 * which are coded here first. A 500 is logged as the bug it is.
 */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpErrorFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    const error = this.toServiceError(exception, req);
    const openAi = isOpenAiRoute(req.path);
    const status = httpStatus(error.code, openAi);
    if (status >= 500) {
      // The path without its query string (which may hold what a client should not have put there), and the request id to find the rest.
      this.logger.error(
        `${req.method} ${req.path} -> ${status}: ${error.message} request_id=${String(req.headers?.[REQUEST_ID_HEADER] ?? '-')}`,
        (exception as Error)?.stack,
      );
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    res.setHeader('x-should-retry', String(shouldRetry(error, status)));
    if (error.details.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.details.retryAfterSeconds));
    res.status(status).json(openAi ? openAiEnvelope(error, status) : detailEnvelope(error));
  }

  private toServiceError(exception: unknown, req: Request): ServiceError {
    if (exception instanceof ServiceError) return exception;
    // Handlers' database errors are coded on the way out (DbModule); a guard's arrive here raw.
    const outage = databaseUnavailable(exception);
    if (outage) return outage;
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      if (status === 404) return ServiceError.notFound(`No route for ${req.method} ${req.path}`);
      const code = codeForStatus(status) ?? (status >= 400 && status < 500 ? ErrorCode.InvalidRequest : undefined);
      if (code) return new ServiceError(code, exception.message);
    }
    const refused = requestRefusal(exception);
    if (refused) return refused;
    return new ServiceError(ErrorCode.Internal, 'Internal server error');
  }
}

/**
 * An error an Express middleware raised about the request itself (http-errors with a 4xx
 * status and `expose` set, as body-parser and the router make them): its message is written
 * for the client. Anything else stays a 500, its message kept in the log.
 */
function requestRefusal(exception: unknown): ServiceError | undefined {
  const { status, expose, message } = (exception ?? {}) as { status?: unknown; expose?: unknown; message?: unknown };
  if (!(exception instanceof Error) || expose !== true || typeof status !== 'number' || status < 400 || status > 499) return undefined;
  return new ServiceError(codeForStatus(status) ?? ErrorCode.InvalidRequest, typeof message === 'string' && message ? message : 'Bad request');
}

function codeForStatus(status: number): ErrorCode | undefined {
  const entry = Object.entries(HTTP_STATUS_BY_CODE).find(([, s]) => s === status);
  return entry?.[0] as ErrorCode | undefined;
}

function detailEnvelope(error: ServiceError) {
  return { detail: error.code === ErrorCode.ValidationFailed && error.details.issues ? error.details.issues : error.message };
}

/** Where OpenAI has its own name for a code, SDK users expect that one. */
const OPENAI_CODES: Partial<Record<ErrorCode, string>> = {
  [ErrorCode.Unauthorized]: 'invalid_api_key',
  [ErrorCode.RateLimited]: 'rate_limit_exceeded',
};

/**
 * The OpenAI error body for a coded error answered with `status`. For an invalid body, `param`
 * names the field of the first problem (null when the body as a whole is the problem) and the
 * message has one sentence per problem, each naming its field.
 */
export function openAiEnvelope(error: ServiceError, status: number) {
  const issues = error.details.issues ?? [];
  const params = issues.map((issue) => openAiPath(issue.loc.slice(1)) || null);
  const unreported = /; and \d+ more problems$/.exec(error.message)?.[0] ?? '';
  const message = issues.length ? issues.map((issue, i) => (params[i] ? `${params[i]}: ${issue.msg}` : issue.msg)).join('; ') + unreported : error.message;
  return {
    error: {
      message,
      type: openAiErrorType(status),
      param: error.details.param ?? params[0] ?? null,
      code: OPENAI_CODES[error.code] ?? error.code,
    },
  };
}

/** A field's path as OpenAI writes it: names joined by dots, array indexes in brackets (`tools[1].function.name`). */
export function openAiPath(loc: readonly (string | number)[]): string {
  return loc.reduce<string>((path, part) => (typeof part === 'number' || /^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}
