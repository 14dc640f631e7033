import type { Response } from 'express';

/**
 * Commits a response as a Server-Sent Events stream: no caching, no proxy buffering
 * (nginx honours x-accel-buffering), headers sent now so the client sees the stream open.
 */
export function openEventStream(res: Response): void {
  res.status(200);
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache');
  res.setHeader('connection', 'keep-alive');
  res.setHeader('x-accel-buffering', 'no');
  res.flushHeaders();
}
