import { ErrorCode, ServiceError } from '@trainyard/contracts';
import type { NextFunction, Request, Response } from 'express';

/**
 * Express error middleware placed right after the body parsers: turns their errors into
 * coded ServiceErrors before Nest sees them (Nest would map malformed JSON to a bare 400
 * and lose what kind of error it was).
 */
export function translateBodyParserErrors(err: unknown, _req: Request, _res: Response, next: NextFunction): void {
  next(fromBodyParser(err) ?? err);
}

export function fromBodyParser(err: unknown): ServiceError | undefined {
  const { type, limit, message } = (err ?? {}) as { type?: string; limit?: number; message?: string };
  switch (type) {
    case 'entity.too.large':
      return new ServiceError(ErrorCode.PayloadTooLarge, `Request body is larger than the limit of ${limit} bytes`);
    case 'entity.parse.failed':
      return ServiceError.validation([{ loc: ['body'], msg: `Malformed JSON: ${message}`, type: 'json_invalid' }]);
    case 'entity.too.deep':
      return ServiceError.validation([{ loc: ['body'], msg: message ?? 'JSON is nested too deeply', type: 'json_too_deep' }]);
    case 'encoding.unsupported':
    case 'charset.unsupported':
    case 'request.aborted':
    case 'request.size.invalid':
      return new ServiceError(ErrorCode.InvalidRequest, message ?? 'Unreadable request body');
    default:
      return undefined;
  }
}
