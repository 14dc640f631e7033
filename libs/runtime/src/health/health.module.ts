import { Global, Module } from '@nestjs/common';
import { ProcessHealthController } from './health.controller';
import { ReadinessService } from './readiness.service';

@Global()
@Module({
  controllers: [ProcessHealthController],
  providers: [ReadinessService],
  exports: [ReadinessService],
})
export class ProcessHealthModule {}
