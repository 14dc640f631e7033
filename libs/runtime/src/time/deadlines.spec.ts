import { settledWithin, withDeadline } from './deadlines';

const later = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('deadlines', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('settledWithin gives the value of a promise that settles in time, and undefined for one that does not', async () => {
    const fast = settledWithin(later(10, 'fast'), 50);
    const slow = settledWithin(later(100, 'slow'), 50);
    await jest.advanceTimersByTimeAsync(60);
    await expect(fast).resolves.toBe('fast');
    await expect(slow).resolves.toBeUndefined();
  });

  it('settledWithin passes a rejection on', async () => {
    await expect(settledWithin(Promise.reject(new Error('refused')), 50)).rejects.toThrow('refused');
  });

  it('withDeadline gives the value in time, and rejects with the message past the deadline', async () => {
    const fast = withDeadline(later(10, 'fast'), 50, 'too slow');
    const slow = withDeadline(later(100, 'slow'), 50, 'too slow');
    slow.catch(() => undefined);
    await jest.advanceTimersByTimeAsync(60);
    await expect(fast).resolves.toBe('fast');
    await expect(slow).rejects.toThrow('too slow');
  });

  it('leaves no timer behind once the promise has settled', async () => {
    await withDeadline(Promise.resolve(1), 1_000, 'too slow');
    await settledWithin(Promise.resolve(1), 1_000);
    expect(jest.getTimerCount()).toBe(0);
  });
});
