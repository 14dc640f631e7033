import type * as tf from '@tensorflow/tfjs-core';

/**
 * Outputs that one pass over a block keeps for a later pass over the same inputs, which takes
 * them instead of computing them again: activation checkpointing's recompute
 * (training/checkpointing.ts, KeptProducts). The ops whose outputs are worth keeping (a
 * projection's product, attention) ask the store in effect for their output's slot; the
 * model's forward knows nothing of it. Outside such a pass no store is in effect.
 */
export interface OutputSlot {
  /** The pass reads only gradients through this output, never its value: zeros stand for it, and its product is skipped. */
  readonly unread: boolean;
  /** The value an earlier pass kept for this output, now the caller's; null where none was kept. */
  take(): tf.Tensor2D | null;
  /** Offers this output's value to be kept for a later pass. */
  keep(value: tf.Tensor2D): void;
}

export interface OutputStore {
  /** The slot of the next output of the pass; `op` is the projection that makes it (undefined for attention). */
  slot(op?: object): OutputSlot;
}

let current: OutputStore | null = null;

/** Runs `pass` with `store` in effect for the ops it calls. */
export function withOutputStore<T>(store: OutputStore, pass: () => T): T {
  const outer = current;
  current = store;
  try {
    return pass();
  } finally {
    current = outer;
  }
}

/** The slot of the next output in the store in effect, or null where none is. */
export function outputSlot(op?: object): OutputSlot | null {
  return current?.slot(op) ?? null;
}

/** Whether a store is in effect: a pass whose outputs are kept or taken by their order, which every op must then ask for its slot. */
export function outputStoreActive(): boolean {
  return current !== null;
}
