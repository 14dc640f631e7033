import { Provider } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { DbModule } from '@trainyard/db';
import { makeModel } from '@trainyard/engine/files';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase } from '@trainyard/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdapterFiles } from '../../src/artifacts/adapter-files';
import { ARTIFACT_STORE } from '../../src/artifacts/artifact-store';
import { LocalArtifactStore } from '../../src/artifacts/local-artifact-store';
import { BaseModelsService } from '../../src/base-models/base-models.service';
import { CheckpointRepository } from '../../src/checkpoints/checkpoint.repository';
import { RegistryConfig } from '../../src/config/registry.config';
import { ModelRepository } from '../../src/models/model.repository';
import { ModelsService } from '../../src/models/models.service';

export const BASE = 'trainyard/tiny-chat';

export interface RegistryFixture {
  moduleRef: TestingModule;
  store: LocalArtifactStore;
  /** Artifact root on disk. */
  root: string;
  modelsDir: string;
  close(): Promise<void>;
}

/**
 * The registry's model and checkpoint services on a fresh database and temporary folders
 * (artifacts, and a models dir holding the tiny base model), plus any extra providers.
 */
export async function startRegistryFixture(extra: Provider[] = []): Promise<RegistryFixture> {
  const db = await createTestDatabase();
  const root = mkdtempSync(join(tmpdir(), 'registry-artifacts-'));
  const modelsDir = mkdtempSync(join(tmpdir(), 'registry-models-'));
  makeModel({ preset: 'tiny', out: join(modelsDir, BASE), seed: 0 });
  const store = new LocalArtifactStore(root);
  const config = Object.assign(new RegistryConfig(), { DATABASE_URL: db.url, MODELS_DIR: modelsDir, ARTIFACT_ROOT: root });
  const moduleRef = await Test.createTestingModule({
    imports: [ProcessHealthModule, DbModule.forRoot(db.url)],
    providers: [
      { provide: RegistryConfig, useValue: config },
      { provide: ARTIFACT_STORE, useValue: store },
      BaseModelsService,
      AdapterFiles,
      ModelRepository,
      ModelsService,
      CheckpointRepository,
      ...extra,
    ],
  }).compile();
  return {
    moduleRef,
    store,
    root,
    modelsDir,
    close: async () => {
      await moduleRef.close();
      await db.drop();
      rmSync(root, { recursive: true, force: true });
      rmSync(modelsDir, { recursive: true, force: true });
    },
  };
}
