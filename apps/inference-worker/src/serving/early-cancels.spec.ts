import { EarlyCancels } from './early-cancels';

describe('EarlyCancels', () => {
  let now: number;
  let cancels: EarlyCancels;

  beforeEach(() => {
    now = 0;
    cancels = new EarlyCancels(1_000, () => now);
  });

  it('stops one start of a cancelled completion, and no other', () => {
    cancels.remember('a');
    expect(cancels.take('b')).toBe(false);
    expect(cancels.take('a')).toBe(true);
    expect(cancels.take('a')).toBe(false);
  });

  it('forgets cancels older than its memory as new ones come', () => {
    cancels.remember('old');
    now = 600;
    cancels.remember('newer');
    now = 1_200;
    cancels.remember('newest');
    expect(cancels.size).toBe(2);
    expect(cancels.take('old')).toBe(false);
    expect(cancels.take('newer')).toBe(true);
  });

  it('counts a repeated cancel from its latest time', () => {
    cancels.remember('a');
    now = 900;
    cancels.remember('b');
    cancels.remember('a');
    now = 1_500;
    cancels.remember('c');
    // b (900) and a (900 again) are both younger than the memory; nothing was dropped.
    expect(cancels.size).toBe(3);
  });
});
