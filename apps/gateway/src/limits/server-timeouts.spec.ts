import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { applyServerTimeouts } from './server-timeouts';

/** Sends a request line and one header, never the blank line that ends the headers; resolves with what came back once the server closes. */
function slowHeaders(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n'));
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
  });
}

describe('applyServerTimeouts', () => {
  let server: Server;

  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  // Node checks the header timeout only every connectionsCheckingInterval (30 s by default): the
  // connection below is closed within the test's 5 s bound only if that interval was set.
  it('closes a connection whose headers do not arrive in time, within a second of the header timeout', async () => {
    server = createServer((_req, res) => res.end('ok'));
    applyServerTimeouts(server, { HTTP_HEADERS_TIMEOUT_MS: 1_000, HTTP_REQUEST_TIMEOUT_MS: 2_000, HTTP_KEEP_ALIVE_TIMEOUT_MS: 1_000 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const reply = await slowHeaders((server.address() as AddressInfo).port);
    expect(reply).toMatch(/^HTTP\/1\.1 408/);
  }, 5_000);
});
