import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { settledWithin } from '@trainyard/runtime';
import { Client } from 'pg';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKeyCache } from './api-key-cache';

/** Announced by the triggers of migration 20261123190000_api_key_changes_notify. */
export const API_KEY_CHANGES_CHANNEL = 'api_key_changes';
/** A key's hash: drop that key. "*" (a TRUNCATE) or anything else unexpected: drop them all. */
const HASH = /^[0-9a-f]{64}$/;
const PROBE_PREFIX = 'probe:';

/** The part of a pg Client the listener uses (tests give it a fake). */
export interface ListenerConnection {
  connect(): Promise<unknown>;
  query(sql: string, values?: unknown[]): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

export interface ListenerTiming {
  /** First wait before reconnecting; doubled after each failure, up to retryMaxMs. */
  retryMinMs: number;
  retryMaxMs: number;
  /** Time between two proofs that the connection still delivers notifications. */
  heartbeatMs: number;
  /** How long a proof (and a connection attempt) may take before the connection counts as lost. */
  probeTimeoutMs: number;
}

const DEFAULT_TIMING: ListenerTiming = { retryMinMs: 100, retryMaxMs: 5_000, heartbeatMs: 5_000, probeTimeoutMs: 5_000 };

/**
 * Keeps the ApiKeyCache honest across processes: one dedicated connection LISTENs for the
 * database's announcements of key changes (a revocation by the key command, another replica,
 * plain SQL) and evicts each changed key. The cache is enabled only while that connection is
 * proven to deliver notifications (a notification sent to itself comes back, at connect and
 * every heartbeatMs): a connection that is lost, silent or cannot deliver (a transaction-mode
 * pooler) leaves the cache empty and bypassed, so every request asks the database, as it
 * would with no cache, until the listener is back.
 */
@Injectable()
export class ApiKeyChangesListener implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ApiKeyChangesListener.name);
  protected timing: ListenerTiming = DEFAULT_TIMING;
  /** The connection in use; any other one that still emits events is stale and ignored. */
  private connection?: ListenerConnection;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private retryMs = 0;
  /** Whether the loss of the connection is news worth a warning (not every failed retry is). */
  private announceLoss = true;
  private readonly probeId = randomBytes(6).toString('hex');
  private probeCount = 0;
  private readonly probes = new Map<string, () => void>();

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    private readonly cache: ApiKeyCache,
  ) {}

  /** Does not wait for the connection: until it is there, requests simply ask the database. */
  onApplicationBootstrap(): void {
    if (this.cache.isOff) return;
    this.retryMs = this.timing.retryMinMs;
    void this.connect();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.cache.disable();
    const connection = this.connection;
    this.connection = undefined;
    if (connection) await closeWithin(connection, this.timing.probeTimeoutMs);
  }

  protected createConnection(): ListenerConnection {
    return new Client({
      connectionString: this.config.DATABASE_URL,
      connectionTimeoutMillis: this.timing.probeTimeoutMs,
      keepAlive: true,
      application_name: 'trainyard-gateway-api-key-changes',
    });
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const connection = this.createConnection();
    this.connection = connection;
    connection.on('notification', ({ channel, payload }) => {
      if (this.connection === connection && channel === API_KEY_CHANGES_CHANNEL) this.onNotification(payload ?? '');
    });
    connection.on('error', (err) => this.lost(connection, err.message));
    connection.on('end', () => this.lost(connection, 'the connection ended'));
    try {
      await connection.connect();
      await connection.query(`LISTEN ${API_KEY_CHANGES_CHANNEL}`);
      await this.probe(connection);
    } catch (err) {
      this.lost(connection, (err as Error).message);
      return;
    }
    if (this.connection !== connection) return;
    this.cache.enable();
    this.retryMs = this.timing.retryMinMs;
    this.announceLoss = true;
    this.logger.log('Listening for API key changes: verified keys are served from memory');
    this.scheduleHeartbeat(connection);
  }

  private scheduleHeartbeat(connection: ListenerConnection): void {
    this.timer = setTimeout(() => {
      this.probe(connection).then(
        () => this.connection === connection && this.scheduleHeartbeat(connection),
        (err: Error) => this.lost(connection, err.message),
      );
    }, this.timing.heartbeatMs);
    this.timer.unref();
  }

  /** Resolves once a notification this connection sent itself has come back on it. */
  private probe(connection: ListenerConnection): Promise<void> {
    const token = `${PROBE_PREFIX}${this.probeId}:${++this.probeCount}`;
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(deadline);
        this.probes.delete(token);
        if (err) reject(err);
        else resolve();
      };
      const deadline = setTimeout(() => done(new Error(`no notification came back within ${this.timing.probeTimeoutMs} ms`)), this.timing.probeTimeoutMs);
      deadline.unref();
      this.probes.set(token, () => done());
      connection.query('SELECT pg_notify($1, $2)', [API_KEY_CHANGES_CHANNEL, token]).catch((err: Error) => done(err));
    });
  }

  private onNotification(payload: string): void {
    if (payload.startsWith(PROBE_PREFIX)) {
      this.probes.get(payload)?.(); // other replicas' probes are no change
    } else if (HASH.test(payload)) {
      this.cache.evictHash(payload);
    } else {
      this.cache.clear();
    }
  }

  /** Whatever went wrong, the cache is off at once; a new connection is tried after a growing wait. */
  private lost(connection: ListenerConnection, reason: string): void {
    if (this.connection !== connection) return;
    this.connection = undefined;
    this.cache.disable();
    clearTimeout(this.timer);
    void closeWithin(connection, this.timing.probeTimeoutMs);
    if (this.stopped) return;
    if (this.announceLoss) {
      this.logger.warn(`Not listening for API key changes (${reason}): every request asks the database until the listener reconnects`);
      this.announceLoss = false;
    }
    this.timer = setTimeout(() => void this.connect(), this.retryMs);
    this.timer.unref();
    this.retryMs = Math.min(this.retryMs * 2, this.timing.retryMaxMs);
  }
}

/** end() can wait forever on a socket that is already gone. */
async function closeWithin(connection: ListenerConnection, ms: number): Promise<void> {
  await settledWithin(connection.end().catch(() => undefined), ms);
}
