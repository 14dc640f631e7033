import type { Server } from 'node:http';
import type { GatewayConfig } from '../config/gateway.config';

/**
 * How often Node looks for connections past the header or request timeout. Its default (30 s)
 * would let a slow-header client hold a socket up to 30 s beyond HTTP_HEADERS_TIMEOUT_MS; at
 * one second every documented timeout holds within a second. The check walks the open
 * connections only, so it costs little even with many of them.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/**
 * Clients that send slowly or sit idle hold a socket for a bounded time only. Call before the
 * server listens: Node starts its connection checker when listening begins.
 */
export function applyServerTimeouts(server: Server, config: Pick<GatewayConfig, 'HTTP_HEADERS_TIMEOUT_MS' | 'HTTP_REQUEST_TIMEOUT_MS' | 'HTTP_KEEP_ALIVE_TIMEOUT_MS'>): void {
  server.headersTimeout = config.HTTP_HEADERS_TIMEOUT_MS;
  server.requestTimeout = config.HTTP_REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = config.HTTP_KEEP_ALIVE_TIMEOUT_MS;
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = CONNECTIONS_CHECKING_INTERVAL_MS;
}
