import { ErrorCode, ServiceError } from '@trainyard/contracts';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Liveness and readiness probes and the system check are never refused: shedding a probe would
 * get a busy gateway restarted, and the system check is how an operator sees the state under load.
 */
const PROBES = /\/(health(\/live|\/ready)?|system-check)$/;

/**
 * The gateway-wide bound on requests in progress, checked before anything else is done for a
 * request (body, authentication): past it, a 429 with Retry-After at once, so that overload
 * never turns into a queue that grows without bound in memory or in the database pool.
 */
export function inFlightLimit(max: number): RequestHandler {
  let inFlight = 0;
  return (req: Request, res: Response, next: NextFunction) => {
    if (max === 0 || PROBES.test(req.path)) return next();
    if (inFlight >= max) {
      return next(
        new ServiceError(ErrorCode.RateLimited, `The server is at capacity (${max} requests in progress); retry shortly`, { retryAfterSeconds: 1 }),
      );
    }
    inFlight++;
    let released = false;
    res.once('close', () => {
      if (released) return;
      released = true;
      inFlight--;
    });
    next();
  };
}
