import { promisify } from 'node:util';
import * as vm from 'node:vm';

/**
 * How this process waits for the GPU through Dawn's node binding.
 *
 * While any of Dawn's promises is pending (a buffer's mapAsync, onSubmittedWorkDone), dawn.node
 * polls the device from a chain of `setImmediate` callbacks, each tick queuing the next: it
 * looks `setImmediate` up on the global object every time and passes it a new native function
 * with no arguments. Left alone, the chain spins a core for the whole wait, and on a software
 * Vulkan driver (lavapipe) it takes that core from the driver's own threads, which do the GPU's
 * work. Paced (the default once Dawn is installed), a tick that continues a wait which has
 * lasted SPIN_MS sleeps first, the thread blocked in Atomics.wait, for a fiftieth of the time
 * waited so far and at most MAX_PAUSE_MS: a wait's end is seen at most about 2 % of its length
 * late, a wait shorter than SPIN_MS is polled as before, and a long one (a training step)
 * polls about a thousand times a second. A pause blocks the event loop as well, so other work
 * of the process (a message from NATS) waits up to MAX_PAUSE_MS longer while the GPU works.
 * Every other `setImmediate` call goes to Node's own.
 */
export type DawnPolling = 'paced' | 'spin';

/** How long a wait is polled without pausing. */
export const SPIN_MS = 0.2;

/** The longest pause between two polls of one wait. */
export const MAX_PAUSE_MS = 1;

/** A pause's length as a fraction of the time waited so far. */
const PAUSE_FRACTION = 1 / 50;

/** Milliseconds to sleep before the next poll of a wait that began `waitedMs` ago. */
export function pollPause(waitedMs: number): number {
  return waitedMs < SPIN_MS ? 0 : Math.min(MAX_PAUSE_MS, waitedMs * PAUSE_FRACTION);
}

/** Dawn's ticks seen since the pacing was installed, and how many of them slept first. */
export interface DawnPollCounts {
  ticks: number;
  paused: number;
}

/** What the pacing keeps, on the global object it paces: one per process, whichever module instance installed it (each jest test file has its own). */
interface PollingState {
  mode: DawnPolling;
  counts: DawnPollCounts;
}

const STATE = Symbol.for('trainyard.dawnPolling');

/** Atomics.wait needs a shared cell to wait on; nothing ever wakes it, so a wait lasts its timeout. */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * The global object Dawn looks `setImmediate` up on: that of Node's main context, where the
 * addon is loaded; in a jest test file, not the file's own.
 */
function hostGlobal(): typeof globalThis & { [STATE]?: PollingState } {
  return vm.runInThisContext('globalThis') as typeof globalThis & { [STATE]?: PollingState };
}

/**
 * Whether a setImmediate callback is one of Dawn's ticks: a native function with no name and
 * no parameters, made from a function template (so with a prototype, which a promise's own
 * resolve function, also native, has not).
 */
function isDawnTick(callback: unknown, args: unknown[]): callback is () => void {
  return (
    args.length === 0 &&
    typeof callback === 'function' &&
    callback.length === 0 &&
    callback.name === '' &&
    Object.prototype.hasOwnProperty.call(callback, 'prototype') &&
    Function.prototype.toString.call(callback).endsWith('{ [native code] }')
  );
}

/** Puts the pacing `setImmediate` on the global object Dawn uses, once a process (Dawn's installation does). */
export function paceDawnPolling(): void {
  pollingState();
}

function pollingState(): PollingState {
  const host = hostGlobal();
  const known = host[STATE];
  if (known) return known;
  const state: PollingState = { mode: 'paced', counts: { ticks: 0, paused: 0 } };
  const original = host.setImmediate as (...args: unknown[]) => NodeJS.Immediate;
  /** When the wait whose tick is running began (null outside Dawn's ticks): a tick queued from inside one continues its wait. */
  let runningWaitStart: number | null = null;
  const paced = function (callback: unknown, ...args: unknown[]) {
    if (!isDawnTick(callback, args)) return original(callback, ...args);
    state.counts.ticks++;
    if (state.mode === 'spin') return original(callback);
    const now = performance.now();
    const started = runningWaitStart ?? now;
    const pause = runningWaitStart === null ? 0 : pollPause(now - started);
    if (pause > 0) {
      state.counts.paused++;
      Atomics.wait(sleeper, 0, 0, pause);
    }
    return original(() => {
      runningWaitStart = started;
      try {
        callback();
      } finally {
        runningWaitStart = null;
      }
    });
  };
  // util.promisify(setImmediate) keeps working.
  Object.defineProperty(paced, promisify.custom, { value: (original as unknown as Record<symbol, unknown>)[promisify.custom] });
  host.setImmediate = paced as unknown as typeof setImmediate;
  host[STATE] = state;
  return state;
}

/** Whether Dawn's ticks are paced or left to spin (benches compare the two). */
export function setDawnPolling(mode: DawnPolling): void {
  pollingState().mode = mode;
}

/** Dawn's ticks seen so far, and how many slept first (a copy). */
export function dawnPollCounts(): DawnPollCounts {
  return { ...pollingState().counts };
}
