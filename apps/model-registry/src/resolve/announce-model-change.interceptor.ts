import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor, UseInterceptors } from '@nestjs/common';
import type { ModelsChanged } from '@trainyard/contracts';
import { catchError, concatMap, from, Observable, throwError } from 'rxjs';
import { ModelChangesPublisher } from './model-changes.publisher';

/**
 * Marks a request handler that can change what a model's names resolve to. Its request must
 * carry `entity_id` and `model_id`. The reply is held until the change is announced.
 */
export const AnnouncesModelChange = () => UseInterceptors(AnnounceModelChangeInterceptor);

/**
 * Announces after the handler, success or failure, and only then lets the reply go: a
 * failure can come after the commit (the model's rows deleted, then its files failed to go),
 * and an announcement too many costs a cache miss, one too few a stale adapter. A failed
 * announcement turns a success into `unavailable`; a failed handler keeps its own error.
 */
@Injectable()
export class AnnounceModelChangeInterceptor implements NestInterceptor {
  private readonly logger = new Logger(AnnounceModelChangeInterceptor.name);

  constructor(private readonly changes: ModelChangesPublisher) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const { entity_id, model_id } = context.switchToRpc().getData<ModelsChanged>();
    const change = { entity_id, model_id };
    return next.handle().pipe(
      catchError((err: unknown) =>
        from(
          this.changes.announce(change).catch((failed: Error) => this.logger.warn(`model ${model_id}: ${failed.message}`)),
        ).pipe(concatMap(() => throwError(() => err))),
      ),
      concatMap(async (reply) => {
        await this.changes.announce(change);
        return reply;
      }),
    );
  }
}
