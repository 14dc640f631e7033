import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';

export interface LegacyEntry {
  key: string;
  modifiedAt: Date;
}

const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** Keys are built from uuids and fixed words; anything else (`..`, `/abs`, empty) is a bug or an attack. */
export function assertSafeKey(key: string): string[] {
  const segments = key.split('/');
  if (segments.length === 0 || !segments.every((s) => SEGMENT.test(s))) {
    throw new Error(`Unsafe artifact key "${key}"`);
  }
  return segments;
}

/**
 * Adapters and files as releases before the content-addressed store wrote them: directories
 * under ARTIFACT_ROOT (`adapters/<model id>/<checkpoint id>`, `files/<entity id>/<file id>`),
 * named by rows' adapter_path and storage_path. Nothing new is written here: a legacy adapter
 * is copied into the artifact store the first time it is resolved (its row then names the
 * bundle), a legacy file is read from here; both are removed with their rows or by the sweep.
 */
export class LegacyArtifactDirs {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  readFile(key: string): Promise<Buffer> {
    return readFile(this.localPath(key));
  }

  async remove(key: string): Promise<void> {
    await rm(this.localPath(key), { recursive: true, force: true });
  }

  /** The children of a directory key; empty when it does not exist. */
  async list(prefix: string): Promise<LegacyEntry[]> {
    const dir = this.localPath(prefix);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return [];
    }
    return Promise.all(names.map(async (name) => ({ key: `${prefix}/${name}`, modifiedAt: (await stat(join(dir, name))).mtime })));
  }

  /** Drops the staging directory that writers of the old layout left when they died mid-write. */
  async sweepStaging(): Promise<void> {
    await rm(join(this.root, '.staging'), { recursive: true, force: true });
  }

  localPath(key: string): string {
    const path = resolve(this.root, ...assertSafeKey(key));
    if (!path.startsWith(this.root + sep)) throw new Error(`Artifact key "${key}" escapes the artifact root`);
    return path;
  }
}
