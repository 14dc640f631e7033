import { Logger } from '@nestjs/common';
import { REQUEST_ID_HEADER } from '@trainyard/contracts';
import type { NextFunction, Request, Response } from 'express';
import type { Caller } from '../auth/caller';

const logger = new Logger('HTTP');
/** Probes hit these every few seconds: logged only at verbose, so they do not drown the rest. */
const PROBES = new Set(['/health/live', '/health/ready']);
const MAX_LOGGED_PATH = 512;

/**
 * One line per request once its response is done: method, path, status, duration, request id
 * and the id (never the secret) of the key that made it. The query string is left out, as are
 * all headers and bodies: a client that puts a credential in a URL parameter must not have it
 * copied into the logs.
 */
export function requestLog(req: Request, res: Response, next: NextFunction): void {
  const started = process.hrtime.bigint();
  res.once('close', () => {
    const path = req.originalUrl.split('?')[0];
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const caller = (req as Request & { caller?: Caller }).caller;
    const status = res.writableFinished ? res.statusCode : `${res.statusCode} (client went away)`;
    const line =
      `${req.method} ${path.length > MAX_LOGGED_PATH ? `${path.slice(0, MAX_LOGGED_PATH)}...` : path} ${status} ${ms.toFixed(1)}ms ` +
      `request_id=${String(res.getHeader(REQUEST_ID_HEADER))} key=${caller?.apiKeyId ?? '-'}`;
    if (PROBES.has(path)) logger.verbose(line);
    else if (res.statusCode >= 500) logger.error(line);
    else logger.log(line);
  });
  next();
}
