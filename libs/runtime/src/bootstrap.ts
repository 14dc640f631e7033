import { DynamicModule, INestApplication, Logger, LogLevel } from '@nestjs/common';
import { HttpAdapterHost, NestFactory } from '@nestjs/core';
import { MicroserviceOptions } from '@nestjs/microservices';
import { BoundedReplySerializer, RECONNECT_FOREVER, RequestConnection, RequestIdInterceptor, RpcErrorFilter } from '@trainyard/messaging';
import type { BaseServiceConfig } from './config/base-service.config';
import { DrainingNatsServer } from './shutdown/draining-nats.server';
import { GracefulShutdown } from './shutdown/graceful-shutdown';
import { HttpDrain } from './shutdown/http-drain';

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
  /**
   * Settles with the reason once the process can no longer do its work (a worker's GPU device
   * lost): it then shuts down as on SIGTERM and exits 1, so that its supervisor starts a fresh
   * one.
   */
  failure?: Promise<Error>;
}

/**
 * Starts one process: HTTP for its health probes (and the gateway's API), plus, for
 * services, a NATS microservice in the service's queue group so replicas share requests.
 * SIGTERM and SIGINT shut it down gracefully (see shutDown), and so does `failure`.
 */
export async function bootstrap(module: DynamicModule, options: BootstrapOptions): Promise<INestApplication> {
  const { name, config, queue } = options;
  const app = await NestFactory.create(module, { logger: logLevels(config.LOG_LEVEL) });
  const shutdown = app.get(GracefulShutdown, { strict: false });
  const parts: ShutdownParts = { app, shutdown, http: new HttpDrain(app.getHttpServer(), shutdown) };
  exitOnSignalsAndFailure(parts, name, config, options.failure);
  await options.configure?.(app);
  if (queue) {
    app.useGlobalFilters(new RpcErrorFilter(app.get(HttpAdapterHost).httpAdapter));
    app.useGlobalInterceptors(new RequestIdInterceptor());
    // Replies too large for NATS become coded errors instead of an exception that ends the process.
    const serializer = new BoundedReplySerializer();
    const requests = app.get(RequestConnection, { strict: false });
    parts.nats = new DrainingNatsServer({ servers: config.NATS_URL, queue, name: `${name}-server`, serializer, ...RECONNECT_FOREVER }, shutdown, requests);
    app.connectMicroservice<MicroserviceOptions>({ strategy: parts.nats }, { inheritAppConfig: true });
    await app.startAllMicroservices();
  }
  await app.listen(config.HTTP_PORT, config.HTTP_HOST);
  new Logger(name).log(`${name} ready on http://${config.HTTP_HOST}:${config.HTTP_PORT}${queue ? ` and NATS queue "${queue}"` : ''}`);
  return app;
}

interface ShutdownParts {
  app: INestApplication;
  shutdown: GracefulShutdown;
  http: HttpDrain;
  nats?: DrainingNatsServer;
}

/** After the drain time, how long failed or handed-back work gets to say so before connections are cut. */
const GIVE_UP_GRACE_MS = 1_000;

/**
 * SIGTERM (Kubernetes, compose) and SIGINT (Ctrl-C) shut the process down within
 * SHUTDOWN_TIMEOUT_MS and exit 0; Nest's own enableShutdownHooks would re-raise the signal
 * instead, hiding whether it went well. A second signal, or a shutdown that overruns, exits 1.
 * `failure` shuts it down the same way and exits 1.
 */
function exitOnSignalsAndFailure(parts: ShutdownParts, name: string, config: BaseServiceConfig, failure?: Promise<Error>): void {
  const logger = new Logger(name);
  let closing = false;
  const close = (reason: string, code: number) => {
    closing = true;
    shutDown(parts, config, logger, reason).then(
      () => process.exit(code),
      (err: Error) => {
        logger.error(`Shutdown failed: ${err.stack ?? err.message}`);
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      logger.warn(`${signal} again: exiting without finishing the shutdown`);
      process.exit(1);
    }
    close(signal, 0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  void failure?.then((err) => {
    if (closing) return;
    logger.error(`${err.message}: this process cannot go on; shutting down to be restarted`);
    close('failure', 1);
  });
}

/**
 * Shuts the process down, cut short by a forced exit 1 at SHUTDOWN_TIMEOUT_MS if any of it hangs
 * (the bound is cleared once it is done, so a process that goes on, as in tests, is not exited).
 */
async function shutDown(parts: ShutdownParts, config: BaseServiceConfig, logger: Logger, reason: string): Promise<void> {
  const started = Date.now();
  logger.log(`${reason}: shutting down (drain ${config.SHUTDOWN_DRAIN_MS} ms, bound ${config.SHUTDOWN_TIMEOUT_MS} ms)`);
  const bound = setTimeout(() => {
    logger.error(`${reason}: not shut down after ${config.SHUTDOWN_TIMEOUT_MS} ms; exiting anyway`);
    process.exit(1);
  }, config.SHUTDOWN_TIMEOUT_MS);
  try {
    await drainAndClose(parts, config, logger, started);
  } finally {
    clearTimeout(bound);
  }
}

/**
 * 1. Take no more work: the HTTP listener closes, NATS subscriptions drain, readiness fails,
 *    and `stopping` tells workers to stop pulling (training jobs are handed back unacknowledged).
 * 2. Let what is held finish, for up to SHUTDOWN_DRAIN_MS.
 * 3. Past that, `expired` tells holders to fail what they still hold clearly; connections are cut.
 * 4. Close the app (module hooks, NATS drained, database disconnected).
 */
async function drainAndClose({ app, shutdown, http, nats }: ShutdownParts, config: BaseServiceConfig, logger: Logger, started: number): Promise<void> {
  http.stopAccepting();
  shutdown.begin();
  await nats?.stopIntake();
  if (!(await shutdown.idle(Math.max(0, config.SHUTDOWN_DRAIN_MS - (Date.now() - started))))) {
    logger.warn(`${shutdown.held} requests or jobs still in progress after ${config.SHUTDOWN_DRAIN_MS} ms: failing or handing them back`);
    shutdown.giveUp();
    await shutdown.idle(GIVE_UP_GRACE_MS);
  }
  http.closeAll();
  await app.close();
  logger.log(`shut down in ${Date.now() - started} ms`);
}

/** Runs `start`, printing a config or start-up error plainly and exiting non-zero. */
export function runMain(start: () => Promise<unknown>): void {
  start().catch((err: Error) => {
    console.error(err.name === 'ConfigError' ? err.message : err.stack ?? err);
    process.exit(1);
  });
}
