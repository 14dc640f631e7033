import { Provider } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { ARTIFACT_STORE, ArtifactStore, DiskArtifactStore, S3ArtifactStore } from '@trainyard/artifacts';
import { DbModule } from '@trainyard/db';
import { makeModel } from '@trainyard/engine/files';
import { BlobStore, MessagingModule } from '@trainyard/messaging';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase, startNatsServer, startS3Server, TestNatsServer, TestS3Server } from '@trainyard/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdapterFiles } from '../../src/artifacts/adapter-files';
import { LegacyArtifactDirs } from '../../src/artifacts/legacy-artifact-dirs';
import { BaseModelBundles } from '../../src/base-models/base-model-bundles';
import { BaseModelsService } from '../../src/base-models/base-models.service';
import { PublishedBaseModelRepository } from '../../src/base-models/published-base-model.repository';
import { CheckpointRepository } from '../../src/checkpoints/checkpoint.repository';
import { RegistryConfig } from '../../src/config/registry.config';
import { ModelRepository } from '../../src/models/model.repository';
import { ModelsService } from '../../src/models/models.service';

export const BASE = 'trainyard/tiny-chat';

export interface RegistryFixture {
  moduleRef: TestingModule;
  store: ArtifactStore;
  legacy: LegacyArtifactDirs;
  /** Artifact root on disk (legacy directories; the disk store's objects). */
  root: string;
  modelsDir: string;
  /** A private nats-server the registry's messaging (requests, blobs) runs on. */
  nats: TestNatsServer;
  close(): Promise<void>;
}

export type StoreKind = 'disk' | 's3';

/**
 * The registry's model and checkpoint services on a fresh database and temporary folders
 * (artifacts, and a models dir holding the tiny base model) and a private nats-server, plus
 * any extra providers; the artifact store on disk or in a private S3-compatible server.
 */
export async function startRegistryFixture(extra: Provider[] = [], kind: StoreKind = 'disk'): Promise<RegistryFixture> {
  const db = await createTestDatabase();
  const nats = await startNatsServer();
  const root = mkdtempSync(join(tmpdir(), 'registry-artifacts-'));
  const modelsDir = mkdtempSync(join(tmpdir(), 'registry-models-'));
  makeModel({ preset: 'tiny', out: join(modelsDir, BASE), seed: 0 });
  let s3: TestS3Server | undefined;
  let store: ArtifactStore;
  if (kind === 's3') {
    s3 = await startS3Server();
    store = new S3ArtifactStore({ endpoint: s3.endpoint, bucket: s3.bucket, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true });
  } else {
    store = new DiskArtifactStore(root);
  }
  const legacy = new LegacyArtifactDirs(root);
  const config = Object.assign(new RegistryConfig(), { DATABASE_URL: db.url, MODELS_DIR: modelsDir, ARTIFACT_ROOT: root });
  const moduleRef = await Test.createTestingModule({
    imports: [
      ProcessHealthModule,
      DbModule.forRoot(db.url),
      MessagingModule.forRoot({ servers: [nats.url], connectionName: 'registry-test', rpcTimeoutMs: 5_000, streamPrefix: 'rt', jetstreamReplicas: 1 }),
    ],
    providers: [
      { provide: RegistryConfig, useValue: config },
      { provide: ARTIFACT_STORE, useValue: store },
      { provide: LegacyArtifactDirs, useValue: legacy },
      BaseModelsService,
      PublishedBaseModelRepository,
      BaseModelBundles,
      AdapterFiles,
      ModelRepository,
      ModelsService,
      CheckpointRepository,
      BlobStore,
      ...extra,
    ],
  }).compile();
  return {
    moduleRef,
    store,
    legacy,
    root,
    modelsDir,
    nats,
    close: async () => {
      await moduleRef.close();
      await nats.stop();
      await db.drop();
      if (store instanceof S3ArtifactStore) store.destroy();
      await s3?.stop();
      rmSync(root, { recursive: true, force: true });
      rmSync(modelsDir, { recursive: true, force: true });
    },
  };
}
