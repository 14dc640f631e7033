import type { WorkerLoad } from '@trainyard/runtime';

/**
 * The sequences of one completion taken from the queue and not decoding yet (loading weights,
 * waiting for the batch, prefilling). Each one leaves the count as it starts decoding (the
 * batches count it from then on) or ends at its first token; closing the admission lets go of
 * those that never got that far.
 */
export class Admission {
  constructor(
    private remaining: number,
    private readonly onClose: (admission: Admission) => void,
  ) {}

  /** Sequences of this admission still on their way into a batch. */
  get waiting(): number {
    return this.remaining;
  }

  /** One sequence is through: decoding (and counted by the batches) or already finished. */
  seated(): void {
    if (this.remaining > 0) this.remaining--;
  }

  /** The admission is over, however it went: its sequences not seated are no longer held. */
  close(): void {
    this.remaining = 0;
    this.onClose(this);
  }
}

/**
 * The worker's slots: MAX_BATCH_SEQUENCES sequences held at once, decoding or on their way in.
 * Each sequence is counted in one place at a time: by its admission until it is seated, then by
 * the batches (`decoding`). Whoever pulls work waits here for a free slot, and hears of every
 * change (to tell peers its load); the worker load reported to pings follows the count.
 */
export class SlotLedger {
  private readonly admissions = new Set<Admission>();
  private readonly listeners: (() => void)[] = [];
  private waiters: (() => void)[] = [];
  private stopping = false;

  constructor(
    private readonly slots: number,
    private readonly load: WorkerLoad,
    /** Sequences in the batches now. */
    private readonly decoding: () => number,
  ) {
    load.slots = slots;
  }

  /** Sequences this worker holds: decoding, or taken from the queue and on their way in. */
  get held(): number {
    return this.decoding() + this.admitting;
  }

  /** Sequences taken from the queue and not yet decoding: waiting for the batch, or prefilling. */
  get admitting(): number {
    let admitting = 0;
    for (const admission of this.admissions) admitting += admission.waiting;
    return admitting;
  }

  get free(): number {
    return this.slots - this.held;
  }

  /** Calls `listener` whenever `held` may have changed. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Resolves once a slot is free (immediately if one is), or when the worker stops admitting. */
  whenFree(): Promise<void> {
    if (this.free > 0 || this.stopping) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Releases anyone waiting for a slot: the worker is shutting down. */
  stop(): void {
    this.stopping = true;
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Holds `sequences` slots for a completion just taken from the queue. */
  admit(sequences: number): Admission {
    const admission = new Admission(sequences, (closed) => {
      this.admissions.delete(closed);
      this.changed();
    });
    this.admissions.add(admission);
    this.changed();
    return admission;
  }

  /** Tells the load, the listeners and the slot waiters: the count may have changed. */
  changed(): void {
    this.load.active = this.held;
    for (const listener of this.listeners) listener();
    while (this.free > 0 && this.waiters.length > 0) this.waiters.shift()?.();
  }
}
