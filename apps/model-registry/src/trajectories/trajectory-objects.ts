import { Inject, Injectable } from '@nestjs/common';
import { ARTIFACT_STORE, ArtifactStore } from '@trainyard/artifacts';

/** Parsed objects kept for the next page, by the bytes of their JSON. */
const KEPT_BYTES = 64 * 1024 * 1024;

/**
 * RL jobs' trajectory groups, each one object in the artifact store (the JSON array as the
 * client sent it), read back for the trajectories that name it. An object never changes, so
 * the few read last are kept parsed: the pages of one job's trajectories read it once.
 */
@Injectable()
export class TrajectoryObjects {
  /** Insertion order is recency: an object read again moves to the end. */
  private readonly kept = new Map<string, { groups: unknown; bytes: number }>();
  private keptBytes = 0;

  constructor(@Inject(ARTIFACT_STORE) private readonly store: ArtifactStore) {}

  /** The stored groups' JSON, parsed (verified against its digest by the store). */
  async groups(sha256: string): Promise<unknown> {
    const hit = this.kept.get(sha256);
    if (hit) {
      this.kept.delete(sha256);
      this.kept.set(sha256, hit);
      return hit.groups;
    }
    const data = await this.store.get(sha256);
    const groups: unknown = JSON.parse(data.toString('utf8'));
    this.keep(sha256, { groups, bytes: data.byteLength });
    return groups;
  }

  private keep(sha256: string, entry: { groups: unknown; bytes: number }): void {
    if (entry.bytes > KEPT_BYTES) return;
    const before = this.kept.get(sha256);
    if (before) this.keptBytes -= before.bytes;
    this.kept.delete(sha256);
    this.kept.set(sha256, entry);
    this.keptBytes += entry.bytes;
    for (const [key, old] of this.kept) {
      if (this.keptBytes <= KEPT_BYTES) break;
      this.kept.delete(key);
      this.keptBytes -= old.bytes;
    }
  }
}
