import { Injectable } from '@nestjs/common';
import { ReadinessService } from '../health/readiness.service';

/**
 * What SIGTERM means to the parts of a process that hold work. `stopping` fires first: take
 * no more (stop pulling, end resumable streams, hand training jobs back). Shutdown then waits
 * until every hold is released, up to SHUTDOWN_DRAIN_MS; `expired` fires when that time is
 * up, and whatever is still held must be failed clearly or handed back at once. Bootstrap
 * drives it; HTTP requests and NATS requests in progress are held by bootstrap itself.
 */
@Injectable()
export class GracefulShutdown {
  private readonly stop = new AbortController();
  private readonly expire = new AbortController();
  private holds = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly readiness: ReadinessService) {}

  /** Aborted on SIGTERM: take no more work. */
  get stopping(): AbortSignal {
    return this.stop.signal;
  }

  /** Aborted when the drain time is over: fail or hand back what is still held. */
  get expired(): AbortSignal {
    return this.expire.signal;
  }

  /** Pieces of work in progress. */
  get held(): number {
    return this.holds;
  }

  /** Marks a piece of work in progress; the returned function releases it (once). */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds--;
      if (this.holds === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    };
  }

  /** Holds until `work` settles; returns `work` itself. */
  track<T>(work: Promise<T>): Promise<T> {
    const release = this.hold();
    work.then(release, release);
    return work;
  }

  /** Resolves true once nothing is held, or false when `timeoutMs` pass first. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.holds === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.idleWaiters = this.idleWaiters.filter((w) => w !== wake);
        resolve(false);
      }, timeoutMs);
      this.idleWaiters.push(wake);
    });
  }

  /** SIGTERM: readiness fails from now on (load balancers and the chat service look elsewhere), intake stops. */
  begin(): void {
    if (this.stop.signal.aborted) return;
    this.readiness.register('shutdown', async () => {
      throw new Error('shutting down');
    });
    this.stop.abort();
  }

  /** The drain time is over. */
  giveUp(): void {
    this.expire.abort();
  }
}

/** Runs `fn` once `signal` is aborted (at once if it already is). */
export function onAbort(signal: AbortSignal, fn: () => void): void {
  if (signal.aborted) fn();
  else signal.addEventListener('abort', fn, { once: true });
}
