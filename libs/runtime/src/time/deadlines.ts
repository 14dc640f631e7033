/**
 * Waiting on a promise for a bounded time. The timer is cleared as soon as the promise
 * settles and never keeps the process alive by itself; the promise itself is left alone (it
 * may still settle later).
 */

/** The promise's value if it settles within `ms`, else undefined. A rejection within `ms` is passed on. */
export async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, elapsed]);
  } finally {
    clearTimeout(timer);
  }
}

/** The promise's value, or a rejection with `new Error(message)` if it has not settled within `ms`. */
export async function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
