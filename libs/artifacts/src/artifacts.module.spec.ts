import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { artifactStoreProbe, ArtifactsModule } from './artifacts.module';
import { ArtifactCache } from './artifact-cache';
import { ARTIFACT_STORE, ArtifactStore } from './artifact-store';
import { DiskArtifactStore } from './disk-artifact-store';
import { S3ArtifactStore } from './s3-artifact-store';

class FakeReadiness {
  readonly probes = new Map<string, () => Promise<unknown>>();
  register(name: string, probe: () => Promise<unknown>): void {
    this.probes.set(name, probe);
  }
}

async function probeOf(store: ArtifactStore): Promise<() => Promise<unknown>> {
  const moduleRef = await Test.createTestingModule({
    imports: [ArtifactsModule.forRoot({ ARTIFACT_STORE: 'disk', ARTIFACT_ROOT: 'unused' } as never, store)],
    providers: [FakeReadiness, artifactStoreProbe(FakeReadiness)],
  }).compile();
  const probe = moduleRef.get(FakeReadiness).probes.get('artifact-store');
  if (!probe) throw new Error('no artifact-store probe registered');
  expect(moduleRef.get(ARTIFACT_STORE)).toBe(store);
  return probe;
}

describe('ArtifactsModule', () => {
  const root = mkdtempSync(join(tmpdir(), 'artifacts-module-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('provides the store, a worker cache when given its settings, and a readiness probe that passes on a reachable store', async () => {
    const store = new DiskArtifactStore(root);
    await expect((await probeOf(store))()).resolves.toEqual({ kind: 'disk' });
    const moduleRef = await Test.createTestingModule({
      imports: [ArtifactsModule.forRoot({ ARTIFACT_STORE: 'disk', ARTIFACT_ROOT: root, ARTIFACT_CACHE_DIR: '', ARTIFACT_CACHE_MB: 1 } as never)],
    }).compile();
    expect(moduleRef.get(ArtifactCache)).toBeInstanceOf(ArtifactCache);
  });

  it('fails the probe when the S3 endpoint does not answer', async () => {
    const store = new S3ArtifactStore({ endpoint: 'http://127.0.0.1:9', bucket: 'b', region: 'us-east-1', accessKeyId: 'x', secretAccessKey: 'y', forcePathStyle: true });
    await expect((await probeOf(store))()).rejects.toThrow();
    store.destroy();
  });
});
