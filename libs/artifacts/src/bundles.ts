import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactStore, isDigest } from './artifact-store';

/** One file of a bundle: its name in the directory and the object holding its bytes. */
export interface BundleFile {
  name: string;
  sha256: string;
  bytes: number;
}

/**
 * A directory stored as objects: each file an object, and a manifest (itself an object)
 * listing them by name. The manifest's digest names the whole directory (a PEFT adapter, an
 * optimizer state), so a reference to it pins every byte of every file.
 */
export interface BundleManifest {
  format: typeof BUNDLE_FORMAT;
  files: BundleFile[];
}

export interface StoredBundle {
  /** SHA-256 of the manifest: the bundle's key. */
  sha256: string;
  files: BundleFile[];
}

export const BUNDLE_FORMAT = 'trainyard.bundle.v1';

/** File names only: a bundle is one flat directory, and names end up in local paths. */
const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

export class InvalidBundleError extends Error {
  readonly code = 'invalid_bundle';
  constructor(message: string) {
    super(message);
    this.name = 'InvalidBundleError';
  }
}

/** Stores each file, then the manifest; the manifest goes last, so a stored manifest's files are all there. */
export async function putBundle(store: ArtifactStore, files: { name: string; data: Uint8Array }[]): Promise<StoredBundle> {
  const stored: BundleFile[] = [];
  for (const file of files) stored.push({ name: file.name, ...(await store.put(file.data)) });
  return putManifest(store, stored);
}

/**
 * Stores every file of a flat directory as one bundle (files streamed: they may be large).
 * `skipDirectories`: leaves subdirectories out (a Hugging Face model's `onnx/` and the like)
 * instead of refusing them.
 */
export async function putBundleFromDir(store: ArtifactStore, dir: string, options: { skipDirectories?: boolean } = {}): Promise<StoredBundle> {
  const stored: BundleFile[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory() && options.skipDirectories) continue;
    if (!entry.isFile()) throw new InvalidBundleError(`${join(dir, entry.name)} is not a file: a bundle is one flat directory`);
    stored.push({ name: entry.name, ...(await store.putFile(join(dir, entry.name))) });
  }
  return putManifest(store, stored);
}

async function putManifest(store: ArtifactStore, files: BundleFile[]): Promise<StoredBundle> {
  const manifest: BundleManifest = { format: BUNDLE_FORMAT, files: [...files].sort((a, b) => (a.name < b.name ? -1 : 1)) };
  checkManifest(manifest);
  const { sha256 } = await store.put(Buffer.from(JSON.stringify(manifest), 'utf8'));
  return { sha256, files: manifest.files };
}

/** The manifest of a stored bundle, verified and checked (a digest of some other object is refused). */
export async function readBundleManifest(store: ArtifactStore, sha256: string): Promise<BundleManifest> {
  const data = await store.get(sha256);
  let manifest: unknown;
  try {
    manifest = JSON.parse(data.toString('utf8'));
  } catch {
    throw new InvalidBundleError(`Artifact ${sha256} is not a bundle manifest`);
  }
  return checkManifest(manifest, sha256);
}

/** Reads every file of a bundle into memory (small bundles: adapters' configs, a dataset). */
export async function readBundle(store: ArtifactStore, sha256: string): Promise<Map<string, Buffer>> {
  const manifest = await readBundleManifest(store, sha256);
  const files = new Map<string, Buffer>();
  for (const file of manifest.files) files.set(file.name, await store.get(file.sha256));
  return files;
}

export function checkManifest(value: unknown, sha256 = 'the manifest'): BundleManifest {
  const manifest = value as BundleManifest;
  const bad = (why: string) => new InvalidBundleError(`Artifact ${sha256} is not a bundle manifest: ${why}`);
  if (!manifest || typeof manifest !== 'object' || manifest.format !== BUNDLE_FORMAT) throw bad(`format is not ${BUNDLE_FORMAT}`);
  if (!Array.isArray(manifest.files)) throw bad('files is not a list');
  const names = new Set<string>();
  for (const file of manifest.files) {
    if (!file || typeof file.name !== 'string' || !FILE_NAME.test(file.name)) throw bad(`bad file name ${JSON.stringify(file?.name)}`);
    if (names.has(file.name)) throw bad(`${file.name} is listed twice`);
    names.add(file.name);
    if (!isDigest(file.sha256)) throw bad(`${file.name} has no SHA-256`);
    if (!Number.isSafeInteger(file.bytes) || file.bytes < 0) throw bad(`${file.name} has no size`);
  }
  return manifest;
}

/** For tests and tools: a directory's files in the shape putBundle takes. */
export async function readDirFiles(dir: string): Promise<{ name: string; data: Buffer }[]> {
  const names = (await readdir(dir)).sort();
  return Promise.all(names.map(async (name) => ({ name, data: await readFile(join(dir, name)) })));
}
