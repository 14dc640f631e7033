import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { GatewayConfig } from '../config/gateway.config';
import { translateBodyParserErrors } from './body-parser-errors';
import { HttpErrorFilter } from './http-error.filter';
import { requestId } from './request-id.middleware';
import { createValidationPipe } from './validation.pipe';

/** Everything the gateway's HTTP edge does before and after a controller runs. */
export function configureHttp(nest: INestApplication, config: GatewayConfig): void {
  const app = nest as NestExpressApplication;
  app.use(requestId);
  app.useBodyParser('json', { limit: config.MAX_BODY_BYTES });
  app.useBodyParser('urlencoded', { limit: config.MAX_BODY_BYTES, extended: false });
  app.use(translateBodyParserErrors);
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalFilters(new HttpErrorFilter());
  app.disable('x-powered-by');
  if (config.API_PREFIX) app.setGlobalPrefix(config.API_PREFIX, { exclude: ['health/live', 'health/ready'] });
}
