import type { Server, ServerResponse } from 'node:http';
import type { GracefulShutdown } from './graceful-shutdown';

/**
 * The HTTP side of shutdown. Every request is held until its response is done. On shutdown
 * the listener closes (new connections are refused), idle keep-alive connections are closed,
 * and a busy one closes as soon as its response is done rather than waiting for another
 * request, as Go's Server.Shutdown does.
 */
export class HttpDrain {
  private draining = false;
  private readonly inFlight = new Set<ServerResponse>();

  constructor(
    private readonly server: Server,
    private readonly shutdown: GracefulShutdown,
  ) {
    server.prependListener('request', (_req, res: ServerResponse) => this.track(res));
  }

  /** Closes the listener and every idle connection; busy ones close after their response. */
  stopAccepting(): void {
    this.draining = true;
    for (const res of this.inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
    this.server.close();
    this.server.closeIdleConnections();
  }

  /** Cuts whatever connection is left (the drain time is over). */
  closeAll(): void {
    this.server.closeAllConnections();
  }

  private track(res: ServerResponse): void {
    const release = this.shutdown.hold();
    this.inFlight.add(res);
    // A request that reached an open keep-alive connection during the drain is served, once.
    if (this.draining) res.setHeader('connection', 'close');
    res.once('close', () => {
      this.inFlight.delete(res);
      release();
      if (this.draining) this.server.closeIdleConnections();
    });
  }
}
