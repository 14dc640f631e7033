import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ArtifactCorruptError, StoredObject } from './artifact-store';

/** SHA-256 and size of a file, read as a stream (a base model's weights do not fit in memory twice). */
export async function digestFile(path: string): Promise<StoredObject> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).byteLength;
  }
  return { sha256: hash.digest('hex'), bytes };
}

/**
 * Writes a stream to `path` through a temporary file beside it, hashing as it goes; the file
 * appears (renamed, after an fsync) only if its digest is `sha256`, so a reader never sees a
 * torn or wrong object.
 */
export async function writeVerified(source: Readable, path: string, sha256: string): Promise<StoredObject> {
  await mkdir(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.${randomUUID()}.partial`);
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      bytes += chunk.byteLength;
      done(null, chunk);
    },
  });
  try {
    await pipeline(source, tap, createWriteStream(temp, { flags: 'wx' }));
    const actual = hash.digest('hex');
    if (actual !== sha256) throw new ArtifactCorruptError(sha256, actual);
    await fsync(temp);
    await rename(temp, path);
    return { sha256, bytes };
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** Writes bytes whole or not at all: temporary file, fsync, rename, fsync of the directory. */
export async function writeAtomically(path: string, data: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.${randomUUID()}.partial`);
  try {
    const handle = await open(temp, 'wx');
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
    await fsync(dirname(path));
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

export async function fsync(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
