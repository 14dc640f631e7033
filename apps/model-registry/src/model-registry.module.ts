import { DynamicModule, Module } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { DbModule } from '@trainyard/db';
import { ServiceRuntimeModule } from '@trainyard/runtime';
import { BaseModelsController } from './base-models/base-models.controller';
import { BaseModelsService } from './base-models/base-models.service';
import { RegistryConfig } from './config/registry.config';

/** Models, checkpoints, adapters on disk, metrics logs and uploaded files. */
@Module({})
export class ModelRegistryModule {
  static forRoot(config: RegistryConfig): DynamicModule {
    return {
      module: ModelRegistryModule,
      imports: [
        ServiceRuntimeModule.forRoot({ name: 'model-registry', config, healthSubject: Subjects.registry.healthCheck }),
        DbModule.forRoot(config.DATABASE_URL),
      ],
      controllers: [BaseModelsController],
      providers: [{ provide: RegistryConfig, useValue: config }, BaseModelsService],
    };
  }
}
