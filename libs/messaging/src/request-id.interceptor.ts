import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { NatsContext } from '@nestjs/microservices';
import { REQUEST_ID_HEADER } from '@trainyard/contracts';
import { Observable } from 'rxjs';
import { runWithRequestId } from './request-context';

/** Service side: handlers run inside the request id that arrived in the NATS headers. */
@Injectable()
export class RequestIdInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'rpc') return next.handle();
    const requestId = context.switchToRpc().getContext<NatsContext>().getHeaders?.()?.get(REQUEST_ID_HEADER);
    if (!requestId) return next.handle();
    return new Observable((subscriber) => runWithRequestId(requestId, () => next.handle().subscribe(subscriber)));
  }
}
