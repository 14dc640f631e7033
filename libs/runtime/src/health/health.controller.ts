import { Controller, Get, HttpCode, HttpStatus, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from './public.decorator';
import { ReadinessService } from './readiness.service';

/** Process-level probes for Kubernetes and compose: live = the process runs, ready = its dependencies answer. */
@Controller('health')
@Public()
export class ProcessHealthController {
  constructor(private readonly readiness: ReadinessService) {}

  /** With the process id: on a host shared by several processes, a probe can tell which one answered. */
  @Get('live')
  @HttpCode(HttpStatus.OK)
  live(): { status: 'ok'; pid: number } {
    return { status: 'ok', pid: process.pid };
  }

  @Get('ready')
  async ready(@Res({ passthrough: true }) res: Response) {
    const report = await this.readiness.report();
    res.status(report.ok ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE);
    return { status: report.ok ? 'ok' : 'failing', checks: report.checks };
  }
}
