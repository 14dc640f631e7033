import * as tf from '@tensorflow/tfjs-core';
import { NumberListLru } from '../number-lists';

/**
 * Constant tensors that pass after pass takes again (a pass's RoPE tables, its causal masks),
 * kept on the backend by the numbers they are made from, the `capacity` most recently asked
 * for. Made on the host, they cost its time (most of it the first touch of new memory) and an
 * upload at every pass; kept, a training step over rows of the lengths of the step before makes
 * none. A caller gets clones (tfjs's Identity: the same data, reference counted) and disposes
 * them as any tensor it is given: a kept tensor dropped while a clone lives frees its data with
 * the last clone.
 */
export class KeptConstants<T extends Record<string, tf.Tensor>> {
  private readonly kept: NumberListLru<T>;

  constructor(capacity: number) {
    this.kept = new NumberListLru<T>(capacity, { dropped: ({ value }) => tf.dispose(Object.values(value)) });
  }

  /** Clones of the tensors kept by `numbers`, which `make` makes the first time (kept out of any scope's reach). */
  get(numbers: readonly number[], make: () => T): T {
    // A copy as the key: the caller's list is its own.
    const kept = this.kept.keep(numbers.slice(), () => {
      const made = make();
      for (const t of Object.values(made)) tf.keep(t);
      return made;
    });
    return Object.fromEntries(Object.entries(kept).map(([name, t]) => [name, tf.clone(t)])) as T;
  }

  /** Drops every kept tensor. */
  dispose(): void {
    this.kept.dropAll();
  }
}
