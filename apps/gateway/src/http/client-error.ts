import { Logger } from '@nestjs/common';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { isOpenAiRoute } from './route-family';

const logger = new Logger('HTTP');

/** What Node's HTTP parser refuses before any route sees the request, as status and message. */
const REFUSALS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request headers are too large'],
  HPE_URI_TOO_LONG: [414, 'Request URL is too long'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request took too long to arrive'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Chunk extensions are too large'],
};

/**
 * Requests Node's HTTP parser cannot make sense of (bad request line, header overflow, broken
 * chunked framing) never reach Express; Node would answer them with a bare status line. This
 * answers them like any other error: JSON in the envelope of the route family when the request
 * line names a path, and the connection closed.
 */
export function answerClientErrorsWithJson(server: Server): void {
  server.on('clientError', (err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex) => {
    const pending = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || pending?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, reason] = REFUSALS[err.code ?? ''] ?? [400, `Malformed HTTP request (${err.code ?? err.message})`];
    const path = /^[A-Z]+ (\S+)/.exec(err.rawPacket?.toString('latin1') ?? '')?.[1] ?? '';
    const body = JSON.stringify(
      isOpenAiRoute(path)
        ? { error: { message: reason, type: 'invalid_request_error', param: null, code: 'invalid_request' } }
        : { detail: reason },
    );
    logger.warn(`refused a malformed request: ${err.code ?? err.message}`);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}
