import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import cookieParser from 'cookie-parser';
import type { GatewayConfig } from '../config/gateway.config';
import { inFlightLimit } from '../limits/in-flight-limit';
import { applyServerTimeouts } from '../limits/server-timeouts';
import { serveConsole } from '../console/console-assets';
import { translateBodyParserErrors } from './body-parser-errors';
import { answerClientErrorsWithJson } from './client-error';
import { cors } from './cors';
import { HttpErrorFilter } from './http-error.filter';
import { refuseDeepJson, refuseReservedKeys } from './json-guards';
import { requestId } from './request-id.middleware';
import { requestLog } from './request-log.middleware';
import { createValidationPipe } from './validation.pipe';

/** Everything the gateway's HTTP edge does before and after a controller runs. */
export function configureHttp(nest: INestApplication, config: GatewayConfig): void {
  const app = nest as NestExpressApplication;
  app.use(requestId);
  app.use(requestLog);
  app.use(cors(config.CORS_ORIGINS));
  answerClientErrorsWithJson(app.getHttpServer());
  app.use(inFlightLimit(config.MAX_IN_FLIGHT_REQUESTS));
  applyServerTimeouts(app.getHttpServer(), config);
  app.use(cookieParser());
  serveConsole(app, config);
  app.useBodyParser('json', { limit: config.MAX_BODY_BYTES, verify: refuseDeepJson });
  app.useBodyParser('urlencoded', { limit: config.MAX_BODY_BYTES, extended: false });
  // The Tinker SDK's forward_backward body: tinker_public protobuf bytes.
  app.useBodyParser('raw', { limit: config.MAX_BODY_BYTES, type: 'application/x-protobuf' });
  app.use(refuseReservedKeys);
  app.use(translateBodyParserErrors);
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalFilters(new HttpErrorFilter());
  app.disable('x-powered-by');
  if (config.API_PREFIX) app.setGlobalPrefix(config.API_PREFIX, { exclude: ['health/live', 'health/ready'] });
}
