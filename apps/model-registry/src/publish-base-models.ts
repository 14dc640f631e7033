import { Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ArtifactsModule } from '@trainyard/artifacts/nest';
import { DbModule } from '@trainyard/db';
import { logLevels, ProcessHealthModule } from '@trainyard/runtime';
import { BaseModelBundles } from './base-models/base-model-bundles';
import { BaseModelsService } from './base-models/base-models.service';
import { EmbeddedBaseModel } from './base-models/embedded-base-model';
import { PublishedBaseModelRepository } from './base-models/published-base-model.repository';
import { RegistryConfig } from './config/registry.config';

@Module({})
class BaseModelPublishingModule {}

/**
 * `node dist/apps/model-registry/main.js publish-base-models`: publishes every base model under
 * MODELS_DIR (the embedded one written first, as the registry does) to the artifact store,
 * records them in the catalogue, removes from it the models no longer there, and exits. For a
 * deployment whose registry replicas and workers mount no models volume: a job with the volume
 * runs this after models are copied in (k8s/components/base-models-in-store).
 */
export async function publishBaseModels(config: RegistryConfig): Promise<void> {
  const logger = new Logger('publish-base-models');
  // The bootstrap hook's background publish stays off: this run publishes, in the foreground.
  const settings = Object.assign(new RegistryConfig(), config, { PUBLISH_BASE_MODELS: false });
  const app = await NestFactory.createApplicationContext(
    {
      module: BaseModelPublishingModule,
      imports: [ProcessHealthModule, DbModule.forRoot(config.DATABASE_URL), ArtifactsModule.forRoot(config)],
      providers: [{ provide: RegistryConfig, useValue: settings }, BaseModelsService, PublishedBaseModelRepository, BaseModelBundles, EmbeddedBaseModel],
    },
    { logger: logLevels(config.LOG_LEVEL) },
  );
  try {
    const { published, removed } = await app.get(BaseModelBundles).publishAll();
    const failed = (await app.get(BaseModelsService).listOnDisk()).filter((m) => !m.unsupported && !published.includes(m.id));
    logger.log(`Published ${published.length} base model(s)${published.length ? `: ${published.join(', ')}` : ''}; removed ${removed.length} from the catalogue`);
    if (failed.length > 0) throw new Error(`Could not publish ${failed.map((m) => m.id).join(', ')} (see the warnings above)`);
  } finally {
    await app.close();
  }
}
