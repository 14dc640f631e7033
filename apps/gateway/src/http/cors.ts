import { ErrorCode, REQUEST_ID_HEADER, ServiceError } from '@trainyard/contracts';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** What a browser script may read of an answer besides the body. */
const EXPOSED_HEADERS = [REQUEST_ID_HEADER, 'x-trainyard-checkpoint-step', 'x-trainyard-export-skipped', 'retry-after', 'x-should-retry'].join(', ');
const ALLOWED_METHODS = 'GET, POST, DELETE, OPTIONS';
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * CORS for browser clients, from CORS_ORIGINS: a comma-separated list of origins, or `*` for
 * any. A preflight from an allowed origin is answered 204 with what it asked for (any method
 * the API has, any header); one from another origin is refused with 403, and an ordinary
 * request from it gets no CORS headers, so the browser keeps the answer from the script.
 * Credentials are never allowed: the API takes bearer keys, and the console's cookie stays
 * with the console.
 */
export function cors(origins: string): RequestHandler {
  const allowed = new Set(origins.split(',').map((o) => o.trim()).filter(Boolean));
  const any = allowed.has('*');
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin;
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
    if (origin === undefined) return next();
    res.vary('Origin');
    if (!any && !allowed.has(origin)) {
      if (preflight) return next(new ServiceError(ErrorCode.Forbidden, `Cross-origin requests from ${origin.slice(0, 200)} are not allowed (CORS_ORIGINS)`));
      return next();
    }
    res.setHeader('Access-Control-Allow-Origin', any ? '*' : origin);
    if (!preflight) {
      res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
      return next();
    }
    res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
    const asked = req.headers['access-control-request-headers'];
    if (asked) res.setHeader('Access-Control-Allow-Headers', asked);
    res.setHeader('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS));
    res.status(204).end();
  };
}
