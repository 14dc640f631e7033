import { UseInterceptors } from '@nestjs/common';
import { IdempotencyInterceptor } from './idempotency.interceptor';

/** Honours an Idempotency-Key header on this POST route (see IdempotencyInterceptor). */
export const Idempotent = () => UseInterceptors(IdempotencyInterceptor);
