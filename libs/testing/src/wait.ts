/** Polls until `check` returns true (or a truthy value), or fails naming what never happened. */
export async function waitFor<T>(
  check: () => Promise<T | false | undefined> | T | false | undefined,
  { what, timeoutMs = 15_000, intervalMs = 100 }: { what: string; timeoutMs?: number; intervalMs?: number },
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const result = await check();
      if (result) return result;
    } catch (err) {
      lastError = err;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const reason = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${reason}`);
}
