/** One file as stored, with what is needed to prove later that it is the same file. */
export interface StoredFile {
  /** Name relative to the artifact (for a directory) or the key itself (for a file). */
  name: string;
  bytes: number;
  sha256: string;
}

export interface ArtifactEntry {
  key: string;
  modifiedAt: Date;
}

/**
 * Where adapters and uploaded files live. Keys are relative paths of safe segments
 * (`adapters/<model id>/<checkpoint id>`); every write is all-or-nothing, so a reader never
 * sees a half-written artifact. Local disk today; an S3-compatible store can implement the
 * same interface (staging locally, then uploading under the final key).
 */
export interface ArtifactStore {
  /** Lets `fill` write files into a private staging directory, then publishes it under `key` at once. */
  putDirectory(key: string, fill: (stagingDir: string) => Promise<void>): Promise<StoredFile[]>;
  putFile(key: string, data: Uint8Array): Promise<StoredFile>;
  readFile(key: string): Promise<Buffer>;
  /** Removes a file or a whole directory; a missing key is not an error (deletes are retried). */
  remove(key: string): Promise<void>;
  /** The children of a directory key; empty when it does not exist. */
  list(prefix: string): Promise<ArtifactEntry[]>;
  /** Drops staging left by writers that died mid-write. */
  sweepStaging(olderThan: Date): Promise<number>;
  /** A path a process on this machine (or sharing the volume) can read the artifact from. */
  localPath(key: string): string;
}

export const ARTIFACT_STORE = Symbol('ARTIFACT_STORE');

const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** Keys are built from uuids and fixed words; anything else (`..`, `/abs`, empty) is a bug or an attack. */
export function assertSafeKey(key: string): string[] {
  const segments = key.split('/');
  if (segments.length === 0 || !segments.every((s) => SEGMENT.test(s))) {
    throw new Error(`Unsafe artifact key "${key}"`);
  }
  return segments;
}

export const artifactKeys = {
  modelAdapters: (modelId: string) => `adapters/${modelId}`,
  adapter: (modelId: string, checkpointId: string) => `adapters/${modelId}/${checkpointId}`,
  entityFiles: (entityId: string) => `files/${entityId}`,
  file: (entityId: string, fileId: string) => `files/${entityId}/${fileId}`,
};
