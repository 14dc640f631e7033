import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { createArtifactStore, withArtifactCache, withArtifactStore } from './artifact-store.config';
import { DiskArtifactStore } from './disk-artifact-store';
import { S3ArtifactStore } from './s3-artifact-store';

class Base {
  HTTP_PORT = 1;
}
class StoreConfig extends withArtifactStore(Base) {}
class WorkerConfig extends withArtifactCache(Base) {}

/** As libs/runtime's loadConfig reads the environment (it cannot be imported here: libs/artifacts depends on nothing of ours). */
function load<T extends object>(cls: new () => T, env: Record<string, string>): { config: T; problems: string[] } {
  const config = plainToInstance(cls, env, { enableImplicitConversion: true, exposeDefaultValues: true });
  return { config, problems: validateSync(config).map((e) => e.property) };
}

describe('the artifact store settings', () => {
  it('defaults to the disk store under var/artifacts, and keeps the base class settings', () => {
    const { config, problems } = load(StoreConfig, {});
    expect(problems).toEqual([]);
    expect(config).toMatchObject({ ARTIFACT_STORE: 'disk', ARTIFACT_ROOT: 'var/artifacts', HTTP_PORT: 1 });
    expect(createArtifactStore(config)).toBeInstanceOf(DiskArtifactStore);
  });

  it('needs a bucket with ARTIFACT_STORE=s3, and names what is wrong', () => {
    expect(load(StoreConfig, { ARTIFACT_STORE: 's3' }).problems).toEqual(['S3_BUCKET']);
    expect(load(StoreConfig, { ARTIFACT_STORE: 'gcs' }).problems).toEqual(['ARTIFACT_STORE']);
    expect(load(StoreConfig, { ARTIFACT_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'minio:9000', S3_PREFIX: 'x' }).problems.sort()).toEqual(['S3_BUCKET', 'S3_ENDPOINT', 'S3_PREFIX']);
  });

  it('builds the S3 store from valid settings, path-style from "true"', () => {
    const { config, problems } = load(StoreConfig, { ARTIFACT_STORE: 's3', S3_BUCKET: 'trainyard-artifacts', S3_ENDPOINT: 'http://minio:9000', S3_FORCE_PATH_STYLE: 'true', S3_PREFIX: 'prod/' });
    expect(problems).toEqual([]);
    expect(config.S3_FORCE_PATH_STYLE).toBe(true);
    const store = createArtifactStore(config);
    expect(store).toBeInstanceOf(S3ArtifactStore);
    (store as S3ArtifactStore).destroy();
  });

  it('gives workers a bounded cache, refusing a bound that is not a positive number of MiB', () => {
    expect(load(WorkerConfig, {}).config).toMatchObject({ ARTIFACT_CACHE_DIR: '', ARTIFACT_CACHE_MB: 4096, ARTIFACT_STORE: 'disk' });
    expect(load(WorkerConfig, { ARTIFACT_CACHE_MB: '0' }).problems).toEqual(['ARTIFACT_CACHE_MB']);
    expect(load(WorkerConfig, { ARTIFACT_CACHE_MB: 'lots' }).problems).toEqual(['ARTIFACT_CACHE_MB']);
  });
});
