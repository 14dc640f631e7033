import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { LogTrajectoriesReply, LogTrajectoriesRequest, Subjects } from '@trainyard/contracts';
import { MetricsLogService } from './metrics-log.service';

@Controller()
export class MetricsLogController {
  constructor(private readonly metricsLog: MetricsLogService) {}

  @MessagePattern(Subjects.registry.logTrajectories.name)
  log(@Payload() request: LogTrajectoriesRequest): Promise<LogTrajectoriesReply> {
    return this.metricsLog.log(request);
  }
}
