import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import type { Request, Response } from 'express';
import { HTTP_STATUS_BY_CODE, openAiErrorType, shouldRetry } from './error-status';
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
    const status = HTTP_STATUS_BY_CODE[error.code];
    if (status >= 500) {
      this.logger.error(`${req.method} ${req.originalUrl} -> ${status}: ${error.message}`, (exception as Error)?.stack);
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    res.setHeader('x-should-retry', String(shouldRetry(status)));
    if (error.details.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.details.retryAfterSeconds));
    res.status(status).json(isOpenAiRoute(req.path) ? openAiEnvelope(error, status) : detailEnvelope(error));
  }

  private toServiceError(exception: unknown, req: Request): ServiceError {
    if (exception instanceof ServiceError) return exception;
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      if (status === 404) return ServiceError.notFound(`No route for ${req.method} ${req.path}`);
      const code = codeForStatus(status);
      if (code) return new ServiceError(code, exception.message);
    }
    return new ServiceError(ErrorCode.Internal, 'Internal server error');
  }
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

function openAiEnvelope(error: ServiceError, status: number) {
  const firstIssue = error.details.issues?.[0];
  return {
    error: {
      message: error.message,
      type: openAiErrorType(status),
      param: error.details.param ?? (firstIssue ? firstIssue.loc.slice(1).join('.') : null),
      code: OPENAI_CODES[error.code] ?? error.code,
    },
  };
}
