import { isDigest } from '@trainyard/artifacts';

const PREFIX = 'sha256:';

/**
 * What a row (a checkpoint's adapter_path, a file's storage_path) stores for an artifact:
 * `sha256:<digest>` of the object (a file) or of the bundle manifest (an adapter) in the
 * artifact store. Rows written before the store was content-addressed hold a directory path
 * relative to ARTIFACT_ROOT instead (see LegacyArtifactDirs).
 */
export function artifactRef(sha256: string): string {
  return PREFIX + sha256;
}

/** The digest a reference names, or null for a legacy path. */
export function digestOfRef(ref: string): string | null {
  const digest = ref.startsWith(PREFIX) ? ref.slice(PREFIX.length) : null;
  return digest !== null && isDigest(digest) ? digest : null;
}
