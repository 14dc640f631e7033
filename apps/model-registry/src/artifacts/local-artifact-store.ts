import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { ArtifactEntry, ArtifactStore, assertSafeKey, StoredFile } from './artifact-store';

const STAGING = '.staging';

/**
 * Artifacts on local disk (or a shared volume). Writes go to a staging directory on the
 * same filesystem, are fsynced, then renamed into place: rename is atomic, so after a
 * crash an artifact is either complete or absent, never torn.
 */
export class LocalArtifactStore implements ArtifactStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async putDirectory(key: string, fill: (stagingDir: string) => Promise<void>): Promise<StoredFile[]> {
    const target = this.localPath(key);
    const staging = await this.stagingPath();
    try {
      await mkdir(staging);
      await fill(staging);
      const stored: StoredFile[] = [];
      for (const name of (await readdir(staging)).sort()) {
        stored.push({ name, ...(await syncAndDigest(join(staging, name))) });
      }
      await syncDirectory(staging);
      await this.publish(staging, target);
      return stored;
    } catch (err) {
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
  }

  async putFile(key: string, data: Uint8Array): Promise<StoredFile> {
    const target = this.localPath(key);
    const staging = await this.stagingPath();
    try {
      const handle = await open(staging, 'wx');
      try {
        await handle.writeFile(data);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await this.publish(staging, target);
      return { name: key, bytes: data.byteLength, sha256: createHash('sha256').update(data).digest('hex') };
    } catch (err) {
      await rm(staging, { force: true });
      throw err;
    }
  }

  readFile(key: string): Promise<Buffer> {
    return readFile(this.localPath(key));
  }

  async remove(key: string): Promise<void> {
    await rm(this.localPath(key), { recursive: true, force: true });
  }

  async list(prefix: string): Promise<ArtifactEntry[]> {
    return this.entries(this.localPath(prefix), prefix);
  }

  async sweepStaging(olderThan: Date): Promise<number> {
    const stale = (await this.entries(join(this.root, STAGING), STAGING)).filter((e) => e.modifiedAt < olderThan);
    await Promise.all(stale.map((e) => rm(join(this.root, e.key), { recursive: true, force: true })));
    return stale.length;
  }

  localPath(key: string): string {
    const path = resolve(this.root, ...assertSafeKey(key));
    if (!path.startsWith(this.root + sep)) throw new Error(`Artifact key "${key}" escapes the artifact root`);
    return path;
  }

  private async stagingPath(): Promise<string> {
    await mkdir(join(this.root, STAGING), { recursive: true });
    return join(this.root, STAGING, randomUUID());
  }

  /** The rename that makes an artifact visible, then an fsync of its directory so the rename itself survives a crash. */
  private async publish(staging: string, target: string): Promise<void> {
    await mkdir(dirname(target), { recursive: true });
    await rename(staging, target);
    await syncDirectory(dirname(target));
  }

  private async entries(dir: string, prefix: string): Promise<ArtifactEntry[]> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return [];
    }
    return Promise.all(
      names.map(async (name) => ({ key: `${prefix}/${name}`, modifiedAt: (await stat(join(dir, name))).mtime })),
    );
  }
}

async function syncAndDigest(path: string): Promise<{ bytes: number; sha256: string }> {
  const handle = await open(path, 'r+');
  try {
    await handle.sync();
    const data = await handle.readFile();
    return { bytes: data.byteLength, sha256: createHash('sha256').update(data).digest('hex') };
  } finally {
    await handle.close();
  }
}

async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
