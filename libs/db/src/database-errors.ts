import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { catchError, Observable, throwError } from 'rxjs';

/** Prisma's codes for "no usable connection": unreachable, timed out, closed, pool exhausted. */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
/** What @prisma/adapter-pg calls a lost or refused connection. */
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);
/** SQLSTATE class 08 (connection exception), 53300 (too many connections), 57P01-57P03 (shutting down, crashed, starting up). */
const SQLSTATE = /^(08...|53300|57P0[1-3])$/;
/** What pg and Prisma say when the server went away without a code to tell it by. */
const MESSAGES =
  /Connection terminated|Can't reach database server|server closed the connection|the database system is (starting up|shutting down|in recovery mode|not yet accepting connections)|terminating connection due to/i;

/**
 * A database that cannot be reached (down, restarting, out of connections) is an outage,
 * not a bug: the caller gets a coded 503 to retry, never a 500. Any other error is not ours
 * to judge and is returned as undefined.
 */
export function databaseUnavailable(err: unknown): ServiceError | undefined {
  if (!isConnectionFailure(err, 0)) return undefined;
  return new ServiceError(ErrorCode.Unavailable, 'The database is not reachable right now; retry shortly', { retryAfterSeconds: 1 });
}

function isConnectionFailure(err: unknown, depth: number): boolean {
  if (typeof err !== 'object' || err === null || depth > 4 || err instanceof ServiceError) return false;
  const { code, message, meta, cause, kind } = err as { code?: unknown; message?: unknown; meta?: unknown; cause?: unknown; kind?: unknown };
  if (typeof code === 'string' && (PRISMA_CODES.has(code) || SOCKET_CODES.has(code) || SQLSTATE.test(code))) return true;
  if (typeof kind === 'string' && ADAPTER_KINDS.has(kind)) return true;
  if (kind === 'postgres' && typeof (err as { originalCode?: unknown }).originalCode === 'string') {
    if (SQLSTATE.test((err as { originalCode: string }).originalCode)) return true;
  }
  if (typeof message === 'string' && MESSAGES.test(message)) return true;
  const adapterError = (meta as { driverAdapterError?: unknown } | undefined)?.driverAdapterError;
  return isConnectionFailure(adapterError, depth + 1) || isConnectionFailure(cause, depth + 1);
}

/**
 * Registered app-wide by DbModule, for HTTP and NATS handlers alike: a lost database
 * becomes the coded 503 above on its way to the error filters, in every service that owns
 * tables, without a try/catch in any repository.
 */
@Injectable()
export class DatabaseErrorsInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(catchError((err: unknown) => throwError(() => databaseUnavailable(err) ?? err)));
  }
}
