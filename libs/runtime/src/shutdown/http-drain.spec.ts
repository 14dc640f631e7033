import { createServer, request, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ReadinessService } from '../health/readiness.service';
import { GracefulShutdown } from './graceful-shutdown';
import { HttpDrain } from './http-drain';

/** A GET that resolves with the status and connection header, or the error. */
function get(port: number): Promise<{ status?: number; connection?: string; error?: string }> {
  return new Promise((resolve) => {
    const req = request({ port, host: '127.0.0.1', path: '/', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code }));
    req.end();
  });
}

describe('HttpDrain', () => {
  let server: Server;
  let shutdown: GracefulShutdown;
  let drain: HttpDrain;
  let port: number;
  let answer: () => void;
  let arrived: Promise<void>;

  beforeEach(async () => {
    shutdown = new GracefulShutdown(new ReadinessService());
    let arrive: () => void = () => undefined;
    arrived = new Promise((resolve) => (arrive = resolve));
    server = createServer((_req, res) => {
      answer = () => res.end('done');
      arrive();
    });
    drain = new HttpDrain(server, shutdown);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterEach(() => {
    server.closeAllConnections();
    server.close();
  });

  it('finishes the request in progress, refuses new connections, then closes', async () => {
    const inFlight = get(port);
    await arrived;
    expect(shutdown.held).toBe(1);

    const closed = new Promise((resolve) => server.once('close', resolve));
    drain.stopAccepting();
    expect((await get(port)).error).toBe('ECONNREFUSED');

    answer();
    expect(await inFlight).toEqual({ status: 200, connection: 'close' });
    expect(await shutdown.idle(5_000)).toBe(true);
    await closed;
  });

  it('cuts what is left when told to', async () => {
    const inFlight = get(port);
    await arrived;
    drain.stopAccepting();
    drain.closeAll();
    expect((await inFlight).error).toBe('ECONNRESET');
    expect(await shutdown.idle(5_000)).toBe(true);
  });
});
