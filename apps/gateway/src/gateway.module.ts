import { DynamicModule, Module } from '@nestjs/common';
import { DbModule } from '@trainyard/db';
import { ServiceRuntimeModule } from '@trainyard/runtime';
import { AuthModule } from './auth/auth.module';
import { GatewayConfig } from './config/gateway.config';
import { ApiHealthController } from './health/api-health.controller';
import { BaseModelsController } from './registry/base-models.controller';

/** HTTP edge: authentication, validation, OpenAI and preview shapes; NATS client only. */
@Module({})
export class GatewayModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: GatewayModule,
      imports: [
        ServiceRuntimeModule.forRoot({ name: 'gateway', config }),
        DbModule.forRoot(config.DATABASE_URL),
        AuthModule,
      ],
      controllers: [ApiHealthController, BaseModelsController],
      providers: [{ provide: GatewayConfig, useValue: config }],
    };
  }
}
