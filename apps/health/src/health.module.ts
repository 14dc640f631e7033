import { DynamicModule, Module } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { ServiceRuntimeModule } from '@trainyard/runtime';
import { HealthConfig } from './config/health.config';
import { DatabaseProbe } from './database-probe';
import { SystemCheckController } from './system-check.controller';
import { SystemCheckService } from './system-check.service';

/** System-check: asks every component and answers with one report. */
@Module({})
export class HealthModule {
  static forRoot(config: HealthConfig): DynamicModule {
    return {
      module: HealthModule,
      imports: [ServiceRuntimeModule.forRoot({ name: 'health', config, healthSubject: Subjects.health.healthCheck })],
      controllers: [SystemCheckController],
      providers: [{ provide: HealthConfig, useValue: config }, DatabaseProbe, SystemCheckService],
    };
  }
}
