import { REQUEST_ID_HEADER } from '@trainyard/contracts';
import { runWithRequestId } from '@trainyard/messaging';
import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';

const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Every response carries an x-request-id: the caller's own when it is sane, else a new one.
 * Mounted with app.use so that it runs before routing, for unknown routes too; everything
 * the request causes runs inside its id, so NATS requests carry it on.
 */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const given = req.header(REQUEST_ID_HEADER);
  const id = given && ACCEPTABLE_ID.test(given) ? given : randomUUID();
  req.headers[REQUEST_ID_HEADER] = id;
  res.setHeader(REQUEST_ID_HEADER, id);
  runWithRequestId(id, next);
}
