import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import type { Request, Response } from 'express';
import { catchError, concatMap, from, Observable, of, throwError } from 'rxjs';
import type { Caller } from '../auth/caller';
import { IdempotencyRecord, IdempotencyRepository, IN_PROGRESS } from './idempotency.repository';
import { requestFingerprint } from './request-fingerprint';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** How long a key is remembered; SDK retries happen within minutes. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
const ACCEPTABLE_KEY = /^[\x21-\x7e]{1,255}$/;

type Outcome = { replay: IdempotencyRecord } | { run: IdempotencyRecord };

/**
 * A POST that carries an Idempotency-Key runs once per entity and key: a retry with the same
 * request gets the first success replayed; the same key with another request is refused; a
 * retry while the first is still running is told to come back (409, which the SDKs retry).
 * Failures are not remembered, so a retry after an error runs again.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(private readonly records: IdempotencyRepository) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<Request & { caller?: Caller }>();
    const key = req.header(IDEMPOTENCY_HEADER);
    if (key === undefined || !req.caller) return next.handle();
    if (!ACCEPTABLE_KEY.test(key)) {
      throw ServiceError.invalid('Idempotency-Key must be 1 to 255 printable ASCII characters', IDEMPOTENCY_HEADER);
    }
    const identity = { entityId: req.caller.entityId, key, method: req.method, path: req.path, requestHash: requestFingerprint(req) };
    const res = context.switchToHttp().getResponse<Response>();

    return from(this.begin(identity)).pipe(
      concatMap((outcome) => {
        if ('replay' in outcome) {
          res.setHeader('idempotent-replayed', 'true');
          return of(outcome.replay.responseBody);
        }
        const record = outcome.run;
        return next.handle().pipe(
          concatMap((body) => from(this.records.complete(record.id, res.statusCode, body).then(() => body))),
          catchError((err: unknown) => from(this.records.release(record.id)).pipe(concatMap(() => throwError(() => err)))),
        );
      }),
    );
  }

  private async begin(identity: Parameters<IdempotencyRepository['claim']>[0]): Promise<Outcome> {
    const result = await this.records.claim(identity);
    if ('claimed' in result) return { run: result.claimed };
    const record = result.existing;
    if (await this.records.forgetIfOlderThan(record.id, new Date(Date.now() - IDEMPOTENCY_TTL_MS))) return this.begin(identity);
    if (record.requestHash !== identity.requestHash) {
      throw ServiceError.validation([
        {
          loc: ['header', IDEMPOTENCY_HEADER],
          msg: `Idempotency-Key "${identity.key}" was already used with a different request; use a new key for a new request`,
          type: 'idempotency_key_reused',
        },
      ]);
    }
    if (record.responseStatus === IN_PROGRESS) {
      throw new ServiceError(
        ErrorCode.Conflict,
        `A request with Idempotency-Key "${identity.key}" is still being processed; retry shortly`,
        { retryAfterSeconds: 1 },
      );
    }
    return { replay: record };
  }
}
