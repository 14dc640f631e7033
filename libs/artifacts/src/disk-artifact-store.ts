import { createReadStream } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import {
  ArtifactNotFoundError,
  ArtifactStore,
  assertDigest,
  ObjectInfo,
  sha256Of,
  StoredObject,
  verified,
} from './artifact-store';
import { digestFile, fsync, writeAtomically, writeVerified } from './files';

/**
 * Objects on a local disk (one machine, or a volume every process mounts):
 * `<root>/objects/sha256/<first two hex digits>/<digest>`. Writes go through a temporary file
 * and a rename, so an object is complete or absent after a crash.
 */
export class DiskArtifactStore implements ArtifactStore {
  readonly kind = 'disk';
  readonly objectsDir: string;

  constructor(root: string) {
    this.objectsDir = join(resolve(root), 'objects', 'sha256');
  }

  async put(data: Uint8Array): Promise<StoredObject> {
    const sha256 = sha256Of(data);
    const path = this.path(sha256);
    if (!(await exists(path))) await writeAtomically(path, data);
    return { sha256, bytes: data.byteLength };
  }

  async putFile(source: string): Promise<StoredObject> {
    const object = await digestFile(source);
    const path = this.path(object.sha256);
    if (await exists(path)) return object;
    await mkdir(join(path, '..'), { recursive: true });
    const temp = `${path}.${randomUUID()}.partial`;
    try {
      await copyFile(source, temp);
      const copied = await digestFile(temp);
      if (copied.sha256 !== object.sha256) throw new Error(`${source} changed while it was being stored`);
      await fsync(temp);
      await rename(temp, path);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    return object;
  }

  async get(sha256: string): Promise<Buffer> {
    return verified(sha256, await this.read(sha256, (path) => readFile(path)));
  }

  async getToFile(sha256: string, target: string): Promise<StoredObject> {
    const path = this.path(sha256);
    if (!(await exists(path))) throw new ArtifactNotFoundError(sha256);
    return writeVerified(createReadStream(path), target, sha256);
  }

  async has(sha256: string): Promise<boolean> {
    return exists(this.path(sha256));
  }

  async delete(sha256: string): Promise<void> {
    await rm(this.path(sha256), { force: true });
  }

  async *list(): AsyncIterable<ObjectInfo> {
    for (const shard of await readdirOrEmpty(this.objectsDir)) {
      for (const name of await readdirOrEmpty(join(this.objectsDir, shard))) {
        if (!/^[0-9a-f]{64}$/.test(name)) continue;
        const info = await stat(join(this.objectsDir, shard, name)).catch(() => null);
        if (info) yield { sha256: name, bytes: info.size, modifiedAt: info.mtime };
      }
    }
  }

  private path(sha256: string): string {
    assertDigest(sha256);
    return join(this.objectsDir, sha256.slice(0, 2), sha256);
  }

  private async read<T>(sha256: string, reader: (path: string) => Promise<T>): Promise<T> {
    try {
      return await reader(this.path(sha256));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ArtifactNotFoundError(sha256);
      throw err;
    }
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
