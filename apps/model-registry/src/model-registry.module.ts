import { DynamicModule, Module } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { DbModule } from '@trainyard/db';
import { BlobStore } from '@trainyard/messaging';
import { ReadinessService, ServiceRuntimeModule } from '@trainyard/runtime';
import { ArtifactStore } from '@trainyard/artifacts';
import { artifactStoreProbe, ArtifactsModule } from '@trainyard/artifacts/nest';
import { AdapterFiles } from './artifacts/adapter-files';
import { ArtifactSweeper } from './artifacts/artifact-sweeper';
import { LegacyArtifactDirs } from './artifacts/legacy-artifact-dirs';
import { BaseModelsController } from './base-models/base-models.controller';
import { BaseModelBundles } from './base-models/base-model-bundles';
import { BaseModelsService } from './base-models/base-models.service';
import { EmbeddedBaseModel } from './base-models/embedded-base-model';
import { PublishedBaseModelRepository } from './base-models/published-base-model.repository';
import { CheckpointRecorderController } from './checkpoints/checkpoint-recorder.controller';
import { CheckpointRecorderService } from './checkpoints/checkpoint-recorder.service';
import { CheckpointRepository } from './checkpoints/checkpoint.repository';
import { CheckpointsController } from './checkpoints/checkpoints.controller';
import { CheckpointsService } from './checkpoints/checkpoints.service';
import { RegistryConfig } from './config/registry.config';
import { FileRepository } from './files/file.repository';
import { FilesController } from './files/files.controller';
import { FilesService } from './files/files.service';
import { MetricsLogController } from './metrics/metrics-log.controller';
import { MetricsLogService } from './metrics/metrics-log.service';
import { ModelRepository } from './models/model.repository';
import { ModelsController } from './models/models.controller';
import { ModelsService } from './models/models.service';
import { ModelChangesPublisher } from './resolve/model-changes.publisher';
import { ModelResolverController } from './resolve/model-resolver.controller';
import { ModelResolverService } from './resolve/model-resolver.service';
import { TrajectoriesController } from './trajectories/trajectories.controller';
import { TrajectoriesService } from './trajectories/trajectories.service';
import { TrajectoryObjects } from './trajectories/trajectory-objects';
import { TrajectoryRepository } from './trajectories/trajectory.repository';

/** Models, checkpoints, adapters in the artifact store, metrics logs, kept trajectories and uploaded files. */
@Module({})
export class ModelRegistryModule {
  /** `store` replaces the one the config names (tests). */
  static forRoot(config: RegistryConfig, store?: ArtifactStore): DynamicModule {
    return {
      module: ModelRegistryModule,
      imports: [
        ServiceRuntimeModule.forRoot({ name: 'model-registry', config, healthSubject: Subjects.registry.healthCheck }),
        DbModule.forRoot(config.DATABASE_URL),
        ArtifactsModule.forRoot(config, store),
      ],
      controllers: [
        BaseModelsController,
        ModelsController,
        CheckpointsController,
        MetricsLogController,
        ModelResolverController,
        FilesController,
        CheckpointRecorderController,
        TrajectoriesController,
      ],
      providers: [
        { provide: RegistryConfig, useValue: config },
        { provide: LegacyArtifactDirs, useValue: new LegacyArtifactDirs(config.ARTIFACT_ROOT) },
        artifactStoreProbe(ReadinessService),
        BlobStore,
        BaseModelsService,
        PublishedBaseModelRepository,
        BaseModelBundles,
        EmbeddedBaseModel,
        AdapterFiles,
        ArtifactSweeper,
        ModelRepository,
        ModelsService,
        CheckpointRepository,
        CheckpointsService,
        CheckpointRecorderService,
        TrajectoryRepository,
        TrajectoryObjects,
        TrajectoriesService,
        MetricsLogService,
        ModelResolverService,
        ModelChangesPublisher,
        FileRepository,
        FilesService,
      ],
    };
  }
}
