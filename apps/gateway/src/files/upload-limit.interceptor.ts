import { CallHandler, Inject, Injectable, NestInterceptor, PayloadTooLargeException } from '@nestjs/common';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { catchError, Observable, throwError } from 'rxjs';
import { GatewayConfig } from '../config/gateway.config';

/** Says what the limit is when multer refuses an upload for its size (its own message is "File too large"). */
@Injectable()
export class UploadLimitInterceptor implements NestInterceptor {
  constructor(@Inject(GatewayConfig) private readonly config: GatewayConfig) {}

  intercept(_: unknown, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((err: unknown) =>
        throwError(() =>
          err instanceof PayloadTooLargeException
            ? new ServiceError(ErrorCode.PayloadTooLarge, `File is larger than the upload limit of ${this.config.MAX_UPLOAD_BYTES} bytes`)
            : err,
        ),
      ),
    );
  }
}
