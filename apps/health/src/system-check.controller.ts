import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, NatsContext } from '@nestjs/microservices';
import { REQUEST_ID_HEADER, Subjects, SystemCheckReport } from '@trainyard/contracts';
import { SystemCheckService } from './system-check.service';

@Controller()
export class SystemCheckController {
  constructor(private readonly systemCheck: SystemCheckService) {}

  @MessagePattern(Subjects.health.systemCheck.name)
  check(@Ctx() context: NatsContext): Promise<SystemCheckReport> {
    return this.systemCheck.run(context.getHeaders()?.get(REQUEST_ID_HEADER) || undefined);
  }
}
