import { createHash } from 'node:crypto';

/** An object as stored: its content's SHA-256 (lowercase hex) is its key. */
export interface StoredObject {
  sha256: string;
  bytes: number;
}

export interface ObjectInfo extends StoredObject {
  /** When the object was first written (GC keeps young objects: a writer may be about to record them). */
  modifiedAt: Date;
}

/**
 * Content-addressed, write-once storage for adapters, optimizer state, uploaded files and
 * trajectories. An object's key is the SHA-256 of its bytes, so writing the same bytes twice
 * stores them once, a key never names two contents, and every reader can verify what it got.
 * Objects are never overwritten; they are deleted only by the registry's garbage collection
 * once no row refers to them.
 */
export interface ArtifactStore {
  /** `disk` or `s3`, for logs and health reports. */
  readonly kind: string;
  /** Stores the bytes under their SHA-256; storing bytes already there is a no-op. */
  put(data: Uint8Array): Promise<StoredObject>;
  /** Like put, streaming a file of any size from disk. */
  putFile(path: string): Promise<StoredObject>;
  /** The object's bytes, verified against the key; ArtifactNotFoundError or ArtifactCorruptError otherwise. */
  get(sha256: string): Promise<Buffer>;
  /** Streams the object into `path` (written whole or not at all), verified against the key. */
  getToFile(sha256: string, path: string): Promise<StoredObject>;
  has(sha256: string): Promise<boolean>;
  /** Deletes an object; a missing one is not an error (deletes are retried). */
  delete(sha256: string): Promise<void>;
  /** Every stored object, in no particular order. */
  list(): AsyncIterable<ObjectInfo>;
}

export const ARTIFACT_STORE = Symbol('ARTIFACT_STORE');

const DIGEST = /^[0-9a-f]{64}$/;

export function isDigest(value: unknown): value is string {
  return typeof value === 'string' && DIGEST.test(value);
}

/** A key is a digest and nothing else: it ends up in file paths and object keys. */
export function assertDigest(sha256: string): string {
  if (!isDigest(sha256)) throw new Error(`"${sha256}" is not a SHA-256 digest (64 lowercase hex digits)`);
  return sha256;
}

export function sha256Of(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

export class ArtifactNotFoundError extends Error {
  readonly code = 'artifact_not_found';
  constructor(readonly sha256: string) {
    super(`Artifact ${sha256} is not in the artifact store`);
    this.name = 'ArtifactNotFoundError';
  }
}

/** The bytes read back do not hash to their key: storage corruption or tampering. Never served. */
export class ArtifactCorruptError extends Error {
  readonly code = 'artifact_corrupt';
  constructor(
    readonly sha256: string,
    readonly actual: string,
  ) {
    super(`Artifact ${sha256} read back with digest ${actual}`);
    this.name = 'ArtifactCorruptError';
  }
}

export function verified(sha256: string, data: Buffer): Buffer {
  const actual = sha256Of(data);
  if (actual !== sha256) throw new ArtifactCorruptError(sha256, actual);
  return data;
}
