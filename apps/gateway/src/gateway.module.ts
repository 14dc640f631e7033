import { DynamicModule, Module } from '@nestjs/common';
import { DbModule } from '@trainyard/db';
import { ServiceRuntimeModule } from '@trainyard/runtime';
import { AuthModule } from './auth/auth.module';
import { ChatModule } from './chat/chat.module';
import { GatewayConfig } from './config/gateway.config';
import { ConsoleModule } from './console/console.module';
import { FilesModule } from './files/files.module';
import { FineTuningModule } from './fine-tuning/fine-tuning.module';
import { ApiHealthController } from './health/api-health.controller';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { LimitsModule } from './limits/limits.module';
import { RegistryModule } from './registry/registry.module';
import { TinkerModule } from './tinker/tinker.module';
import { TrainingModule } from './training/training.module';

/** HTTP edge: authentication, validation, OpenAI and preview shapes; NATS client only. */
@Module({})
export class GatewayModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: GatewayModule,
      imports: [
        ServiceRuntimeModule.forRoot({ name: 'gateway', config }),
        DbModule.forRoot(config.DATABASE_URL),
        AuthModule.forRoot(config),
        LimitsModule.forRoot(config),
        IdempotencyModule,
        RegistryModule,
        TrainingModule,
        TinkerModule,
        FineTuningModule,
        FilesModule.forRoot(config),
        ChatModule.forRoot(config),
        ConsoleModule.forRoot(config),
      ],
      controllers: [ApiHealthController],
      providers: [{ provide: GatewayConfig, useValue: config }],
    };
  }
}
