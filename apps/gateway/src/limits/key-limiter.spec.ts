import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { KeyLimiter } from './key-limiter';

/** A limiter on a clock the test moves by hand. */
function limiter(limits: { requests?: number; windowMs?: number; concurrent?: number }) {
  const clock = { now: 1_000_000 };
  const l = new KeyLimiter({ requests: 0, windowMs: 60_000, concurrent: 0, ...limits }, () => clock.now);
  return { l, clock };
}

function refusal(fn: () => unknown): ServiceError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('KeyLimiter', () => {
  describe('rate', () => {
    it('lets a key burst up to the limit, then refuses with 429 and how long to wait', () => {
      const { l } = limiter({ requests: 10, windowMs: 60_000 });
      for (let i = 0; i < 10; i++) l.admit('a')();
      const error = refusal(() => l.admit('a'));
      expect(error.code).toBe(ErrorCode.RateLimited);
      // One request's worth of the window: 60 s / 10.
      expect(error.details.retryAfterSeconds).toBe(6);
      expect(error.message).toMatch(/10 requests per 60 s/);
    });

    it('refills evenly: after the wait it was told, the key may go again; after a whole window, a whole burst', () => {
      const { l, clock } = limiter({ requests: 10, windowMs: 60_000 });
      for (let i = 0; i < 10; i++) l.admit('a')();
      const wait = refusal(() => l.admit('a')).details.retryAfterSeconds as number;
      clock.now += wait * 1000 - 1;
      expect(() => l.admit('a')).toThrow(ServiceError);
      clock.now += 1;
      l.admit('a')();
      expect(() => l.admit('a')).toThrow(ServiceError);
      clock.now += 60_000;
      for (let i = 0; i < 10; i++) l.admit('a')();
      expect(() => l.admit('a')).toThrow(ServiceError);
    });

    it('never asks to wait less than a second', () => {
      const { l } = limiter({ requests: 1_000, windowMs: 1_000 });
      for (let i = 0; i < 1_000; i++) l.admit('a')();
      expect(refusal(() => l.admit('a')).details.retryAfterSeconds).toBe(1);
    });

    it('keeps each key to its own allowance', () => {
      const { l } = limiter({ requests: 2 });
      l.admit('a')();
      l.admit('a')();
      expect(() => l.admit('a')).toThrow(ServiceError);
      l.admit('b')();
      l.admit('b')();
    });

    it('does not spend allowance on requests refused for concurrency', () => {
      const { l } = limiter({ requests: 2, concurrent: 1 });
      const release = l.admit('a');
      expect(() => l.admit('a')).toThrow(/concurrent/);
      release();
      l.admit('a')();
      expect(() => l.admit('a')).toThrow(/Rate limit/);
    });
  });

  describe('concurrency', () => {
    it('refuses a key past its requests in progress until one is released', () => {
      const { l } = limiter({ concurrent: 2 });
      const first = l.admit('a');
      l.admit('a');
      const error = refusal(() => l.admit('a'));
      expect(error.code).toBe(ErrorCode.RateLimited);
      expect(error.details.retryAfterSeconds).toBe(1);
      expect(error.message).toMatch(/2 are allowed in progress/);
      l.admit('b');
      first();
      l.admit('a');
    });

    it('counts a release once, however often it is called', () => {
      const { l } = limiter({ concurrent: 1 });
      const release = l.admit('a');
      release();
      release();
      l.admit('a');
      expect(() => l.admit('a')).toThrow(ServiceError);
    });
  });

  it('limits nothing when both limits are 0', () => {
    const { l } = limiter({ requests: 0, concurrent: 0 });
    for (let i = 0; i < 10_000; i++) l.admit('a');
  });

  it('forgets idle keys once their allowance is full again, but never a key with requests in progress', () => {
    const { l, clock } = limiter({ requests: 5, windowMs: 1_000, concurrent: 5 });
    l.admit('idle')();
    const held = l.admit('busy');
    expect(l.size).toBe(2);
    clock.now += 1_000;
    l.admit('other')();
    expect(l.size).toBe(2);
    // The busy key's count survived the sweep: releasing it frees a slot of the same state.
    for (let i = 0; i < 4; i++) l.admit('busy');
    expect(() => l.admit('busy')).toThrow(/concurrent/);
    held();
    l.admit('busy');
  });
});
