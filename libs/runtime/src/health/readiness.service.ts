import { Injectable } from '@nestjs/common';
import type { ComponentCheck } from '@trainyard/contracts';
import { checkComponent } from './component-check';

export type Probe = () => Promise<Record<string, unknown> | void>;

/**
 * The hard dependencies of this process. Modules register a probe for each one they own
 * (database, NATS, a loaded model); /health/ready and the service's health subject
 * report all of them.
 */
@Injectable()
export class ReadinessService {
  private readonly probes = new Map<string, Probe>();

  register(name: string, probe: Probe): void {
    this.probes.set(name, probe);
  }

  async report(timeoutMs = 2_000): Promise<{ ok: boolean; checks: Record<string, ComponentCheck> }> {
    const entries = await Promise.all(
      [...this.probes].map(async ([name, probe]) => [name, await checkComponent(probe, timeoutMs)] as const),
    );
    const checks = Object.fromEntries(entries);
    return { ok: entries.every(([, c]) => c.ok), checks };
  }
}
