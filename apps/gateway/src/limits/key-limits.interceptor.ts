import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Response } from 'express';
import type { Observable } from 'rxjs';
import type { Caller } from '../auth/caller';
import { KeyLimiter } from './key-limiter';

/**
 * Applies the caller's per-key limits. An interceptor rather than a guard because
 * interceptors run after every guard, so the caller is always known here; public routes
 * (no caller) are not limited. A request counts as in progress until its response closes,
 * streams included.
 */
@Injectable()
export class KeyLimitsInterceptor implements NestInterceptor {
  constructor(private readonly limiter: KeyLimiter) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const caller = http.getRequest<{ caller?: Caller }>().caller;
    if (!caller) return next.handle();
    const release = this.limiter.admit(caller.apiKeyId);
    const res = http.getResponse<Response>();
    res.once('close', release);
    // The client may already have gone: then 'close' has fired and will not again.
    if (res.destroyed) release();
    return next.handle();
  }
}
