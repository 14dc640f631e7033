import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskArtifactStore } from '../src';
import { describeArtifactStoreContract } from './artifact-store.contract';

describeArtifactStoreContract('DiskArtifactStore', async () => {
  const root = await mkdtemp(join(tmpdir(), 'trainyard-disk-store-'));
  const store = new DiskArtifactStore(root);
  return {
    store,
    corrupt: (sha256, data) => writeFile(join(store.objectsDir, sha256.slice(0, 2), sha256), data),
    stop: () => rm(root, { recursive: true, force: true }),
  };
});
