import { ErrorCode, ServiceError } from '@trainyard/contracts';

export interface KeyLimits {
  /** Requests a key may make per window: bursts up to this many, refilled evenly over the window. 0: no limit. */
  requests: number;
  windowMs: number;
  /** Requests a key may have in progress at once. 0: no limit. */
  concurrent: number;
}

interface KeyState {
  /** Requests the key may still make now (a token bucket). */
  tokens: number;
  /** When `tokens` was last brought up to date. */
  at: number;
  inFlight: number;
}

/**
 * The per-API-key limits, in this process's memory: a token bucket for the rate and a count
 * of requests in progress. Refusals are 429s saying how long to wait. Keys idle and back to
 * their full allowance are forgotten, so memory follows the keys in use.
 */
export class KeyLimiter {
  private readonly keys = new Map<string, KeyState>();
  private lastSweep: number;

  constructor(
    private readonly limits: KeyLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.lastSweep = now();
  }

  /** Admits one request of `key` or throws a 429 ServiceError; call the returned function (once or more) when the request is over. */
  admit(key: string): () => void {
    const now = this.now();
    this.sweep(now);
    const { requests, windowMs, concurrent } = this.limits;
    const state = this.state(key, now);
    if (concurrent > 0 && state.inFlight >= concurrent) {
      throw new ServiceError(
        ErrorCode.RateLimited,
        `Too many concurrent requests for this API key: ${concurrent} are allowed in progress at once; retry when one has finished`,
        { retryAfterSeconds: 1 },
      );
    }
    if (requests > 0) {
      if (state.tokens < 1) {
        const waitMs = ((1 - state.tokens) * windowMs) / requests;
        const seconds = Math.max(1, Math.ceil(waitMs / 1000));
        throw new ServiceError(
          ErrorCode.RateLimited,
          `Rate limit reached for this API key: ${requests} requests per ${windowMs / 1000} s; retry in ${seconds} s`,
          { retryAfterSeconds: seconds },
        );
      }
      state.tokens -= 1;
    }
    state.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      state.inFlight--;
    };
  }

  /** Keys currently remembered (for tests and metrics). */
  get size(): number {
    return this.keys.size;
  }

  private state(key: string, now: number): KeyState {
    let state = this.keys.get(key);
    if (!state) {
      state = { tokens: this.limits.requests, at: now, inFlight: 0 };
      this.keys.set(key, state);
    } else {
      state.tokens = this.refilled(state, now);
      state.at = now;
    }
    return state;
  }

  private refilled(state: KeyState, now: number): number {
    const { requests, windowMs } = this.limits;
    return Math.min(requests, state.tokens + ((now - state.at) * requests) / windowMs);
  }

  /** Once a window: forget keys with nothing in progress and a full allowance (they would start afresh anyway). */
  private sweep(now: number): void {
    if (now - this.lastSweep < this.limits.windowMs) return;
    this.lastSweep = now;
    for (const [key, state] of this.keys) {
      if (state.inFlight === 0 && this.refilled(state, now) >= this.limits.requests) this.keys.delete(key);
    }
  }
}
