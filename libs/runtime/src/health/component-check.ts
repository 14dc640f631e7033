import type { ComponentCheck } from '@trainyard/contracts';
import { withDeadline } from '../time/deadlines';

/**
 * Runs one probe with a deadline and reports it in the system-check shape. A probe
 * signals failure by throwing; whatever it resolves to is merged into the report.
 */
export async function checkComponent(
  probe: () => Promise<Record<string, unknown> | void>,
  timeoutMs: number,
): Promise<ComponentCheck> {
  const started = performance.now();
  try {
    const extra = (await withDeadline(probe(), timeoutMs, `no answer within ${timeoutMs} ms`)) ?? {};
    return { ok: true, latency_ms: elapsed(started), error: null, ...extra };
  } catch (err) {
    return { ok: false, latency_ms: elapsed(started), error: err instanceof Error ? err.message : String(err) };
  }
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 10) / 10;
}
