import type { Server } from 'node:http';
import type { GatewayConfig } from '../config/gateway.config';

/** Clients that send slowly or sit idle hold a socket for a bounded time only. */
export function applyServerTimeouts(server: Server, config: GatewayConfig): void {
  server.headersTimeout = config.HTTP_HEADERS_TIMEOUT_MS;
  server.requestTimeout = config.HTTP_REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = config.HTTP_KEEP_ALIVE_TIMEOUT_MS;
}
