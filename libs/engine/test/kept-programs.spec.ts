import { keptPrograms } from '../src/kernels/webgpu-program';
import { hashNumbers, NumberListEntry, NumberListLru, sameNumbers } from '../src/number-lists';

/**
 * What the engine's kernels and its device keep between the dispatches of a step: a kernel's
 * programs by the key of their shapes (keptPrograms), and the lists of numbers the bind group and
 * uniform caches look their entries up by (number-lists.ts).
 */
describe("a kernel's kept programs", () => {
  it('makes a program once for a key, and again for another key', () => {
    const programs = keptPrograms<{ key: string }>();
    let made = 0;
    const make = (key: string) => () => ({ key: `${key}#${++made}` });
    const first = programs('a', make('a'));
    expect(programs('a', make('a'))).toBe(first);
    expect(programs('b', make('b'))).toEqual({ key: 'b#2' });
    expect(made).toBe(2);
  });

  it('past its capacity makes again the program least recently used', () => {
    const programs = keptPrograms<string>(2);
    const made: string[] = [];
    const get = (key: string) => programs(key, () => (made.push(key), key));
    get('a');
    get('b');
    get('a');
    get('c'); // drops b, the least recently used
    get('a');
    get('b');
    expect(made).toEqual(['a', 'b', 'c', 'b']);
  });
});

describe('lists of numbers as keys', () => {
  it('hashes equal lists alike, NaN and Infinity included', () => {
    expect(hashNumbers([NaN, Infinity, 3, 4096])).toBe(hashNumbers([NaN, Infinity, 3, 4096]));
    expect(hashNumbers([1, 2, 3])).not.toBe(hashNumbers([1, 3, 2]));
  });

  it('takes NaN as equal to NaN, and lists of other lengths or values as different', () => {
    expect(sameNumbers([NaN, 1], [NaN, 1])).toBe(true);
    expect(sameNumbers([NaN, 1], [NaN, 2])).toBe(false);
    expect(sameNumbers([1, 2], [1, 2, 3])).toBe(false);
    expect(sameNumbers([0.5], [0.25])).toBe(false);
  });

  it('keeps values by lists of numbers, dropping the least recently used past capacity and what its owner deletes', () => {
    const added: NumberListEntry<string>[] = [];
    const dropped: string[] = [];
    const lru = new NumberListLru<string>(2, { added: (e) => added.push(e), dropped: (e) => dropped.push(e.value) });
    expect(lru.keep([1, NaN], () => 'a')).toBe('a');
    expect(lru.keep([1, NaN], () => 'again')).toBe('a');
    lru.keep([2], () => 'b');
    lru.keep([1, NaN], () => 'again'); // a is now the most recently used
    lru.keep([3], () => 'c'); // drops b
    expect([lru.size, lru.hits, lru.misses]).toEqual([2, 2, 3]);
    expect(added.map((e) => e.value)).toEqual(['a', 'b', 'c']);
    expect(dropped).toEqual(['b']);
    // Deleted by its owner (a destroyed buffer's bind groups): dropped once, then made again.
    lru.delete(added[2]);
    lru.delete(added[2]);
    expect(dropped).toEqual(['b', 'c']);
    expect(lru.keep([3], () => 'c again')).toBe('c again');
  });
});
