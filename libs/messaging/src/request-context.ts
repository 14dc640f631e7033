import { AsyncLocalStorage } from 'node:async_hooks';

const storage = new AsyncLocalStorage<{ requestId: string }>();

/**
 * The request id of the work in progress, without threading it through every call: the
 * gateway opens a context per HTTP request, services per incoming message, and RpcClient
 * copies it into the NATS headers of every request made inside.
 */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return storage.run({ requestId }, fn);
}

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
