import { Logger } from '@nestjs/common';
import { waitFor } from '@trainyard/testing';
import { EventEmitter } from 'node:events';
import type { GatewayConfig } from '../config/gateway.config';
import { ApiKeyCache } from './api-key-cache';
import { API_KEY_CHANGES_CHANNEL, ApiKeyChangesListener, ListenerConnection, ListenerTiming } from './api-key-changes.listener';

/** A pg Client stand-in: LISTEN works, notifications come back unless `deaf`, `fail` refuses to connect. */
class FakeConnection extends EventEmitter implements ListenerConnection {
  ended = false;
  readonly sql: string[] = [];

  constructor(
    private readonly fail: boolean,
    public deaf: boolean,
  ) {
    super();
  }

  async connect(): Promise<void> {
    if (this.fail) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
  }

  async query(sql: string, values: unknown[] = []): Promise<void> {
    this.sql.push(sql);
    if (sql.startsWith('SELECT pg_notify') && !this.deaf) setImmediate(() => this.notify(String(values[1])));
  }

  async end(): Promise<void> {
    this.ended = true;
  }

  notify(payload: string): void {
    this.emit('notification', { channel: API_KEY_CHANGES_CHANNEL, payload });
  }
}

const TIMING: ListenerTiming = { retryMinMs: 5, retryMaxMs: 20, heartbeatMs: 20, probeTimeoutMs: 50 };
const HASH = 'a'.repeat(64);

function listenerWith(options: { failFirst?: number; ttlMs?: number; deaf?: boolean } = {}) {
  const cache = new ApiKeyCache({ maxEntries: 10, ttlMs: options.ttlMs ?? 60_000 });
  const connections: FakeConnection[] = [];
  class TestListener extends ApiKeyChangesListener {
    protected override timing = TIMING;
    protected override createConnection(): FakeConnection {
      const connection = new FakeConnection(connections.length < (options.failFirst ?? 0), options.deaf ?? false);
      connections.push(connection);
      return connection;
    }
  }
  const listener = new TestListener({ DATABASE_URL: 'postgresql://x/y' } as GatewayConfig, cache);
  const put = (hash: string) => cache.set(hash, { caller: { entityId: 'e', entityName: 'e', apiKeyId: hash }, lastUsedAt: null }, cache.ticket());
  const listening = () => waitFor(() => cache.isEnabled, { what: 'the listener to enable the cache', timeoutMs: 2_000, intervalMs: 2 });
  return { cache, connections, listener, put, listening };
}

describe('ApiKeyChangesListener', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['log', 'warn', 'error']));
  let stop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await stop?.();
    stop = undefined;
  });

  it('leaves the cache bypassed until it listens and has seen a notification of its own come back', async () => {
    const { cache, connections, listener, listening } = listenerWith();
    stop = () => listener.onModuleDestroy();
    expect(cache.isEnabled).toBe(false);
    listener.onApplicationBootstrap();
    expect(cache.isEnabled).toBe(false);
    await listening();
    expect(connections[0].sql.slice(0, 2)).toEqual([`LISTEN ${API_KEY_CHANGES_CHANNEL}`, 'SELECT pg_notify($1, $2)']);
  });

  it('evicts the key whose hash is announced, and everything on "*"', async () => {
    const { cache, connections, listener, put, listening } = listenerWith();
    stop = () => listener.onModuleDestroy();
    listener.onApplicationBootstrap();
    await listening();
    put(HASH);
    put('b'.repeat(64));
    connections[0].notify(HASH);
    expect(cache.get(HASH)).toBeUndefined();
    expect(cache.get('b'.repeat(64))).toBeDefined();
    connections[0].notify('probe:of-another-replica:1');
    expect(cache.size).toBe(1);
    connections[0].notify('*');
    expect(cache.size).toBe(0);
  });

  it('clears and bypasses the cache the moment its connection errors or ends, then reconnects', async () => {
    const { cache, connections, listener, put, listening } = listenerWith();
    stop = () => listener.onModuleDestroy();
    listener.onApplicationBootstrap();
    await listening();
    put(HASH);
    connections[0].emit('error', new Error('Connection terminated unexpectedly'));
    expect(cache.isEnabled).toBe(false);
    expect(cache.size).toBe(0);
    expect(connections[0].ended).toBe(true);
    await listening();
    expect(connections).toHaveLength(2);

    connections[1].emit('end');
    expect(cache.isEnabled).toBe(false);
    await listening();
    expect(connections).toHaveLength(3);
  });

  it('keeps trying with a growing wait while the database refuses it', async () => {
    const { cache, connections, listener, listening } = listenerWith({ failFirst: 4 });
    stop = () => listener.onModuleDestroy();
    listener.onApplicationBootstrap();
    await listening();
    expect(connections).toHaveLength(5);
    expect(cache.isEnabled).toBe(true);
  });

  it('drops a connection that has stopped delivering notifications (heartbeat)', async () => {
    const { cache, connections, listener, put, listening } = listenerWith();
    stop = () => listener.onModuleDestroy();
    listener.onApplicationBootstrap();
    await listening();
    put(HASH);
    connections[0].deaf = true;
    await waitFor(() => !cache.isEnabled, { what: 'the heartbeat to notice', timeoutMs: 2_000, intervalMs: 2 });
    expect(cache.size).toBe(0);
    await listening();
    expect(connections).toHaveLength(2);
  });

  it('never enables the cache on a connection that cannot deliver notifications (a transaction pooler)', async () => {
    const { cache, connections, listener } = listenerWith({ deaf: true });
    stop = () => listener.onModuleDestroy();
    listener.onApplicationBootstrap();
    await waitFor(() => connections.length >= 3, { what: 'the listener to have tried three times', timeoutMs: 2_000, intervalMs: 2 });
    expect(cache.isEnabled).toBe(false);
  });

  it('does not connect at all when the cache is off', async () => {
    const { connections, listener } = listenerWith({ ttlMs: 0 });
    listener.onApplicationBootstrap();
    await new Promise((r) => setTimeout(r, 20));
    expect(connections).toHaveLength(0);
  });

  it('closes its connection on shutdown and does not come back', async () => {
    const { cache, connections, listener, listening } = listenerWith();
    listener.onApplicationBootstrap();
    await listening();
    await listener.onModuleDestroy();
    expect(connections[0].ended).toBe(true);
    expect(cache.isEnabled).toBe(false);
    connections[0].emit('end');
    await new Promise((r) => setTimeout(r, 50));
    expect(connections).toHaveLength(1);
  });
});
