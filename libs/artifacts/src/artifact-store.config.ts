import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsString, Matches, Min, ValidateIf } from 'class-validator';
import { ArtifactStore } from './artifact-store';
import { DiskArtifactStore } from './disk-artifact-store';
import { S3ArtifactStore } from './s3-artifact-store';

/** The settings of the artifact store, as every process that reads or writes artifacts takes them. */
export interface ArtifactStoreSettings {
  ARTIFACT_STORE: 'disk' | 's3';
  ARTIFACT_ROOT: string;
  S3_ENDPOINT: string;
  S3_REGION: string;
  S3_BUCKET: string;
  S3_PREFIX: string;
  S3_ACCESS_KEY_ID: string;
  S3_SECRET_ACCESS_KEY: string;
  S3_FORCE_PATH_STYLE: boolean;
}

/** A worker's local cache of artifacts fetched from the store. */
export interface ArtifactCacheSettings {
  ARTIFACT_CACHE_DIR: string;
  ARTIFACT_CACHE_MB: number;
  BASE_MODEL_SOURCE: 'volume' | 'store';
}

const toBoolean = ({ value }: { value: unknown }) => (typeof value === 'string' ? ['true', '1', 'yes'].includes(value.trim().toLowerCase()) : value);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Constructor<T = object> = new (...args: any[]) => T;

/**
 * Adds the artifact store's settings, validated at boot like the rest, to an app's config
 * class: `class RegistryConfig extends withArtifactStore(BaseServiceConfig)`.
 */
export function withArtifactStore<TBase extends Constructor>(Base: TBase) {
  class WithArtifactStore extends Base implements ArtifactStoreSettings {
    /** disk: objects under ARTIFACT_ROOT (one machine, or a volume all share); s3: an S3-compatible bucket. */
    @IsIn(['disk', 's3'])
    ARTIFACT_STORE: 'disk' | 's3' = 'disk';

    /** With ARTIFACT_STORE=disk, where objects live (`objects/sha256/...`); every process must see the same directory. */
    @IsString()
    ARTIFACT_ROOT = 'var/artifacts';

    /** The S3 API's URL; empty for AWS itself. */
    @Matches(/^$|^https?:\/\/[^\s]+$/, { message: 'must be empty or an http(s):// URL' })
    S3_ENDPOINT = '';

    @IsString()
    S3_REGION = 'us-east-1';

    /** Required with ARTIFACT_STORE=s3; the bucket must exist. */
    @ValidateIf((o: ArtifactStoreSettings) => o.ARTIFACT_STORE === 's3')
    @Matches(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { message: 'must name a bucket (3-63 lowercase letters, digits, dots, hyphens) when ARTIFACT_STORE=s3' })
    S3_BUCKET = '';

    /** Prefix of every key, ending in "/" (several deployments can share a bucket); may be empty. */
    @Matches(/^$|^[A-Za-z0-9!_.*'()/-]*\/$/, { message: 'must be empty or end in "/"' })
    S3_PREFIX = '';

    /** Empty: the SDK's default credentials chain (AWS_* variables, IRSA / workload identity, instance profile). */
    @IsString()
    S3_ACCESS_KEY_ID = '';

    @IsString()
    S3_SECRET_ACCESS_KEY = '';

    /** Path-style URLs (`endpoint/bucket/key`): MinIO, Ceph and most self-hosted servers need it. */
    @Transform(toBoolean)
    @IsBoolean()
    S3_FORCE_PATH_STYLE = false;
  }
  return WithArtifactStore;
}

/** Adds the store's settings and a local cache's (for the workers, which read artifacts by digest). */
export function withArtifactCache<TBase extends Constructor>(Base: TBase) {
  class WithArtifactCache extends withArtifactStore(Base) implements ArtifactCacheSettings {
    /**
     * Local disk for artifacts fetched from the store, this process's own: never shared by two
     * workers. Empty (the default): a private temporary directory, removed at shutdown. In
     * Kubernetes, an emptyDir volume.
     */
    @IsString()
    ARTIFACT_CACHE_DIR = '';

    /** Bound of that cache (MiB): beyond it the least recently used artifacts not in use are deleted. */
    @Type(() => Number)
    @IsInt()
    @Min(1)
    ARTIFACT_CACHE_MB = 4096;

    /**
     * Where base models are loaded from: `volume`, the directory the registry names (a shared
     * volume, read-only is enough); `store`, the artifact store, fetched by digest into the
     * cache (the registry publishes them: PUBLISH_BASE_MODELS), the directory serving only
     * while a model is not published yet.
     */
    @IsIn(['volume', 'store'])
    BASE_MODEL_SOURCE: 'volume' | 'store' = 'volume';
  }
  return WithArtifactCache;
}

export function createArtifactStore(settings: ArtifactStoreSettings): ArtifactStore {
  if (settings.ARTIFACT_STORE === 's3') {
    return new S3ArtifactStore({
      bucket: settings.S3_BUCKET,
      prefix: settings.S3_PREFIX,
      endpoint: settings.S3_ENDPOINT,
      region: settings.S3_REGION,
      accessKeyId: settings.S3_ACCESS_KEY_ID,
      secretAccessKey: settings.S3_SECRET_ACCESS_KEY,
      forcePathStyle: settings.S3_FORCE_PATH_STYLE,
    });
  }
  return new DiskArtifactStore(settings.ARTIFACT_ROOT);
}
