import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { PrismaService } from '@trainyard/db';
import { ARTIFACT_STORE, ArtifactEntry, ArtifactStore } from './artifact-store';

/** Younger than this, an unreferenced artifact may be a write another replica is about to record. */
export const SWEEP_GRACE_MS = 10 * 60_000;

/**
 * Removes what crashes leave behind: staging of interrupted writes, and adapters or files
 * that were written but never recorded (or whose rows were deleted before their files).
 * Runs once at start, in the background; rows are the truth, files without rows are litter.
 */
@Injectable()
export class ArtifactSweeper implements OnApplicationBootstrap {
  private readonly logger = new Logger(ArtifactSweeper.name);

  constructor(
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
    private readonly prisma: PrismaService,
  ) {}

  onApplicationBootstrap(): void {
    this.sweep(new Date(Date.now() - SWEEP_GRACE_MS)).catch((err: Error) => this.logger.warn(`Artifact sweep failed: ${err.message}`));
  }

  /** Returns how many artifacts it removed. */
  async sweep(olderThan: Date): Promise<number> {
    let removed = await this.store.sweepStaging(olderThan);
    const adapters = await this.orphans('adapters', olderThan, async (keys) => {
      const rows = await this.prisma.checkpoint.findMany({ where: { adapterPath: { in: keys } }, select: { adapterPath: true } });
      return new Set(rows.map((r) => r.adapterPath));
    });
    const files = await this.orphans('files', olderThan, async (keys) => {
      const rows = await this.prisma.file.findMany({ where: { storagePath: { in: keys } }, select: { storagePath: true } });
      return new Set(rows.map((r) => r.storagePath));
    });
    for (const entry of [...adapters, ...files]) {
      await this.store.remove(entry.key);
      removed++;
    }
    if (removed > 0) this.logger.log(`Removed ${removed} unreferenced artifact(s)`);
    return removed;
  }

  /** Two levels under a root (`adapters/<model>/<checkpoint>`, `files/<entity>/<file>`), minus those recorded. */
  private async orphans(
    root: string,
    olderThan: Date,
    recorded: (keys: string[]) => Promise<Set<string>>,
  ): Promise<ArtifactEntry[]> {
    const found: ArtifactEntry[] = [];
    for (const owner of await this.store.list(root)) {
      const entries = (await this.store.list(owner.key)).filter((e) => e.modifiedAt < olderThan);
      if (entries.length === 0) continue;
      const known = await recorded(entries.map((e) => e.key));
      found.push(...entries.filter((e) => !known.has(e.key)));
    }
    return found;
  }
}
