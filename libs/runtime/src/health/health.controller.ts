import { Controller, Get, HttpCode, HttpStatus, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from './public.decorator';
import { ReadinessService } from './readiness.service';

/** Process-level probes for Kubernetes and compose: live = the process runs, ready = its dependencies answer. */
@Controller('health')
@Public()
export class ProcessHealthController {
  constructor(private readonly readiness: ReadinessService) {}

  @Get('live')
  @HttpCode(HttpStatus.OK)
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  async ready(@Res({ passthrough: true }) res: Response) {
    const report = await this.readiness.report();
    res.status(report.ok ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE);
    return { status: report.ok ? 'ok' : 'failing', checks: report.checks };
  }
}
