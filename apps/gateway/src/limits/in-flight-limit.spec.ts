import { ErrorCode, ServiceError } from '@trainyard/contracts';
import type { Request, Response } from 'express';
import { EventEmitter } from 'node:events';
import { inFlightLimit } from './in-flight-limit';

function call(handler: ReturnType<typeof inFlightLimit>, path = '/v1/models') {
  const res = new EventEmitter();
  let passed: unknown = 'not called';
  handler({ path } as Request, res as unknown as Response, (err?: unknown) => {
    passed = err;
  });
  return { res, error: passed as ServiceError | undefined, close: () => res.emit('close') };
}

describe('inFlightLimit', () => {
  it('refuses with 429 and Retry-After once the gateway has the most requests in progress, until one closes', () => {
    const handler = inFlightLimit(2);
    const first = call(handler);
    call(handler);
    expect(first.error).toBeUndefined();
    const refused = call(handler);
    expect(refused.error).toBeInstanceOf(ServiceError);
    expect(refused.error?.code).toBe(ErrorCode.RateLimited);
    expect(refused.error?.details.retryAfterSeconds).toBe(1);
    first.close();
    first.close();
    expect(call(handler).error).toBeUndefined();
    expect(call(handler).error).toBeInstanceOf(ServiceError);
  });

  it('never refuses the health probes and the system check', () => {
    const handler = inFlightLimit(1);
    call(handler);
    for (const path of ['/health/live', '/health/ready', '/v1/health', '/api/training/v1/health', '/v1/system-check', '/api/training/v1/system-check']) {
      expect(call(handler, path).error).toBeUndefined();
    }
    expect(call(handler, '/v1/system-checks').error).toBeInstanceOf(ServiceError);
    expect(call(handler, '/v1/models').error).toBeInstanceOf(ServiceError);
  });

  it('limits nothing at 0', () => {
    const handler = inFlightLimit(0);
    for (let i = 0; i < 1_000; i++) expect(call(handler).error).toBeUndefined();
  });
});
