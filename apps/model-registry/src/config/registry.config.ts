import { withArtifactStore } from '@trainyard/artifacts';
import { BaseServiceConfig, booleanSetting, DATABASE_URL_PATTERN } from '@trainyard/runtime';
import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsInt, IsString, Matches, Min } from 'class-validator';

/** The artifact store's settings (ARTIFACT_STORE, ARTIFACT_ROOT, S3_*) come with withArtifactStore. */
export class RegistryConfig extends withArtifactStore(BaseServiceConfig) {
  override HTTP_PORT = 3102;

  @Matches(DATABASE_URL_PATTERN, { message: 'must be a postgresql:// URL' })
  DATABASE_URL!: string;

  /**
   * Base models: Hugging Face model directories under here, as <name>/ or <org>/<name>/. Empty
   * for a replica without a models volume: it serves the models published to the artifact store.
   */
  @IsString()
  MODELS_DIR = 'var/models';

  /**
   * A tiny base model the registry writes under MODELS_DIR at start when it is missing, so
   * a fresh deployment can serve and train at once. Empty turns it off.
   */
  @Matches(/^([A-Za-z0-9._-]+\/)?[A-Za-z0-9._-]+$|^$/, { message: 'must be empty, <name> or <org>/<name>' })
  EMBEDDED_BASE_MODEL = 'trainyard/tiny-chat';

  /**
   * Also stores the base models found under MODELS_DIR in the artifact store, recorded in the
   * catalogue of published models, so that workers and chat with BASE_MODEL_SOURCE=store, and
   * registry replicas with an empty MODELS_DIR, need no models volume.
   */
  @Transform(booleanSetting)
  @IsBoolean()
  PUBLISH_BASE_MODELS = false;

  /**
   * Seconds between sweeps of the artifact store (and of ended jobs' trajectory holds); the
   * first runs at start. 0 sweeps at start only.
   */
  @IsInt()
  @Min(0)
  @Type(() => Number)
  ARTIFACT_SWEEP_INTERVAL_S = 3600;

  /** Per model, the most trajectories kept (POST .../log and RL jobs' groups); beyond it the oldest go. */
  @IsInt()
  @Min(1)
  @Type(() => Number)
  TRAJECTORY_RETENTION_COUNT = 10_000;

  /** Per model, the most bytes of trajectory JSON kept; beyond it the oldest go. One trajectory larger than this is not kept. */
  @IsInt()
  @Min(1)
  @Type(() => Number)
  TRAJECTORY_RETENTION_BYTES = 256 * 1024 * 1024;
}
