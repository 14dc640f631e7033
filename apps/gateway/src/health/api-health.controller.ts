import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ComponentCheck, ServiceError, Subjects, SYSTEM_COMPONENTS, SystemCheckReport } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import { Public } from '@trainyard/runtime';
import type { Response } from 'express';
import { GatewayConfig } from '../config/gateway.config';

@Controller('v1')
@Public()
export class ApiHealthController {
  constructor(
    private readonly rpc: RpcClient,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {}

  /** Liveness of the gateway itself. */
  @Get('health')
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Every component, each {ok, latency_ms, error}; 503 when any is not ok. */
  @Get('system-check')
  async systemCheck(@Res({ passthrough: true }) res: Response): Promise<SystemCheckReport> {
    const started = performance.now();
    const report = await this.askHealthService();
    const api: ComponentCheck = { ok: true, latency_ms: Math.round(performance.now() - started), error: null };
    const components = { api, ...report.components };
    const failing = Object.entries(components)
      .filter(([, c]) => !c.ok)
      .map(([name]) => name);
    res.status(failing.length === 0 ? 200 : 503);
    return { status: failing.length === 0 ? 'ok' : 'failing', failing, components };
  }

  /** Without the health service nothing else can be checked: say so for every component. */
  private async askHealthService(): Promise<Pick<SystemCheckReport, 'components'>> {
    try {
      return await this.rpc.request(Subjects.health.systemCheck, {}, { timeoutMs: this.config.SYSTEM_CHECK_TIMEOUT_MS });
    } catch (err) {
      const reason = err instanceof ServiceError ? err.message : String(err);
      const unknown = (name: string): ComponentCheck => ({
        ok: false,
        latency_ms: 0,
        error: name === 'health' ? reason : 'not checked: the health service did not answer',
      });
      return {
        components: Object.fromEntries(SYSTEM_COMPONENTS.filter((c) => c !== 'api').map((c) => [c, unknown(c)])),
      };
    }
  }
}
