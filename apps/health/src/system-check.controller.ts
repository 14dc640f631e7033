import { Controller } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { Subjects, SystemCheckReport } from '@trainyard/contracts';
import { SystemCheckService } from './system-check.service';

@Controller()
export class SystemCheckController {
  constructor(private readonly systemCheck: SystemCheckService) {}

  @MessagePattern(Subjects.health.systemCheck.name)
  check(): Promise<SystemCheckReport> {
    return this.systemCheck.run();
  }
}
