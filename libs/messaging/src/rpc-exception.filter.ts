import { ArgumentsHost, Catch, Logger } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { RpcException } from '@nestjs/microservices';
import { ErrorCode, ServiceError, WireError } from '@trainyard/contracts';
import { Observable, throwError } from 'rxjs';
import { currentRequestId } from './request-context';

/**
 * Service side of the error contract: a ServiceError crosses the wire as its coded JSON;
 * anything else is a bug, logged with its stack and sent as a bare `internal` error.
 * Registered app-wide (Nest cannot add filters to a connected microservice), so HTTP
 * errors of the health probes are left to Nest's default handling.
 */
@Catch()
export class RpcErrorFilter extends BaseExceptionFilter {
  private readonly logger = new Logger('RpcErrorFilter');

  override catch(exception: unknown, host: ArgumentsHost): Observable<never> | void {
    if (host.getType() !== 'rpc') return super.catch(exception, host);
    return throwError(() => new RpcException(this.toWire(exception, host)).getError());
  }

  private toWire(exception: unknown, host: ArgumentsHost): WireError {
    if (exception instanceof ServiceError) return exception.toWire();
    const subject = host.getType() === 'rpc' ? host.switchToRpc().getContext()?.getSubject?.() : undefined;
    this.logger.error(
      `Unhandled error on ${subject ?? 'unknown subject'} request_id=${currentRequestId() ?? '-'}`,
      (exception as Error)?.stack ?? String(exception),
    );
    return new ServiceError(ErrorCode.Internal, 'Internal error').toWire();
  }
}
