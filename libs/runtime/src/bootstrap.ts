import { DynamicModule, INestApplication, Logger, LogLevel } from '@nestjs/common';
import { HttpAdapterHost, NestFactory } from '@nestjs/core';
import { MicroserviceOptions, Transport } from '@nestjs/microservices';
import { RECONNECT_FOREVER, RequestIdInterceptor, RpcErrorFilter } from '@trainyard/messaging';
import type { BaseServiceConfig } from './config/base-service.config';

const LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

export function logLevels(level: BaseServiceConfig['LOG_LEVEL']): LogLevel[] {
  return LEVELS.slice(0, LEVELS.indexOf(level) + 1);
}

export interface BootstrapOptions {
  name: string;
  config: BaseServiceConfig;
  /** NATS queue group: given for services that answer requests, absent for workers. */
  queue?: string;
  /** Extra HTTP set-up (the gateway's pipes, filters and body limits). */
  configure?: (app: INestApplication) => void | Promise<void>;
}

/**
 * Starts one process: HTTP for its health probes (and the gateway's API), plus, for
 * services, a NATS microservice in the service's queue group so replicas share requests.
 * SIGTERM and SIGINT drain NATS and close HTTP before the process exits.
 */
export async function bootstrap(module: DynamicModule, options: BootstrapOptions): Promise<INestApplication> {
  const { name, config, queue } = options;
  const app = await NestFactory.create(module, { logger: logLevels(config.LOG_LEVEL) });
  exitCleanlyOnSignals(app, name);
  await options.configure?.(app);
  if (queue) {
    app.useGlobalFilters(new RpcErrorFilter(app.get(HttpAdapterHost).httpAdapter));
    app.useGlobalInterceptors(new RequestIdInterceptor());
    app.connectMicroservice<MicroserviceOptions>(
      {
        transport: Transport.NATS,
        options: { servers: config.NATS_URL, queue, name: `${name}-server`, ...RECONNECT_FOREVER },
      },
      { inheritAppConfig: true },
    );
    await app.startAllMicroservices();
  }
  await app.listen(config.HTTP_PORT, config.HTTP_HOST);
  new Logger(name).log(`${name} ready on http://${config.HTTP_HOST}:${config.HTTP_PORT}${queue ? ` and NATS queue "${queue}"` : ''}`);
  return app;
}

/**
 * SIGTERM (Kubernetes, compose) and SIGINT (Ctrl-C) close the app, running every
 * shutdown hook (NATS drained, HTTP closed, database disconnected), then exit 0. Nest's
 * own enableShutdownHooks would re-raise the signal instead, hiding whether it went well.
 */
function exitCleanlyOnSignals(app: INestApplication, name: string): void {
  const logger = new Logger(name);
  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    logger.log(`${signal}: shutting down`);
    app.close().then(
      () => process.exit(0),
      (err: Error) => {
        logger.error(`Shutdown failed: ${err.message}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

/** Runs `start`, printing a config or start-up error plainly and exiting non-zero. */
export function runMain(start: () => Promise<unknown>): void {
  start().catch((err: Error) => {
    console.error(err.name === 'ConfigError' ? err.message : err.stack ?? err);
    process.exit(1);
  });
}
