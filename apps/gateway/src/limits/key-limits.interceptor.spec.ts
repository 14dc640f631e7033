import type { CallHandler, ExecutionContext } from '@nestjs/common';
import { ServiceError } from '@trainyard/contracts';
import { EventEmitter } from 'node:events';
import { of } from 'rxjs';
import { KeyLimiter } from './key-limiter';
import { KeyLimitsInterceptor } from './key-limits.interceptor';

function context(caller: { apiKeyId: string } | undefined, res: EventEmitter & { destroyed?: boolean }): ExecutionContext {
  return {
    getType: () => 'http',
    switchToHttp: () => ({ getRequest: () => ({ caller }), getResponse: () => res }),
  } as unknown as ExecutionContext;
}

const next: CallHandler = { handle: () => of('ok') };

describe('KeyLimitsInterceptor', () => {
  const make = () => new KeyLimitsInterceptor(new KeyLimiter({ requests: 0, windowMs: 60_000, concurrent: 1 }));

  it("holds the caller's slot until the response closes", () => {
    const interceptor = make();
    const res = new EventEmitter();
    interceptor.intercept(context({ apiKeyId: 'k' }, res), next);
    expect(() => interceptor.intercept(context({ apiKeyId: 'k' }, new EventEmitter()), next)).toThrow(ServiceError);
    interceptor.intercept(context({ apiKeyId: 'other' }, new EventEmitter()), next);
    res.emit('close');
    interceptor.intercept(context({ apiKeyId: 'k' }, new EventEmitter()), next);
  });

  it('frees the slot at once when the client had already gone', () => {
    const interceptor = make();
    interceptor.intercept(context({ apiKeyId: 'k' }, Object.assign(new EventEmitter(), { destroyed: true })), next);
    interceptor.intercept(context({ apiKeyId: 'k' }, new EventEmitter()), next);
  });

  it('leaves public routes (no caller) alone', () => {
    const interceptor = make();
    for (let i = 0; i < 5; i++) interceptor.intercept(context(undefined, new EventEmitter()), next);
  });
});
