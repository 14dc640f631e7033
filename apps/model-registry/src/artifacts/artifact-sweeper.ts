import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ARTIFACT_STORE, ArtifactNotFoundError, ArtifactStore, readBundleManifest } from '@trainyard/artifacts';
import { Subjects } from '@trainyard/contracts';
import { lockReferencesExclusive, Prisma, PrismaService } from '@trainyard/db';
import { RpcClient } from '@trainyard/messaging';
import { BaseModelBundles } from '../base-models/base-model-bundles';
import { digestOfRef } from '../common/artifact-ref';
import { RegistryConfig } from '../config/registry.config';
import { LegacyArtifactDirs, LegacyEntry } from './legacy-artifact-dirs';

/** Younger than this, an unreferenced artifact may be a write another replica or a worker is about to record. */
export const SWEEP_GRACE_MS = 10 * 60_000;

/** The longest the sweep holds the references lock (recording checkpoints and files waits on it). */
const SWEEP_TIMEOUT_MS = 10 * 60_000;

/** Job ids per question to the orchestrator (a NATS message holds about 25,000). */
const ENDED_JOBS_CHUNK = 1_000;

/**
 * Deletes what no row refers to: objects of the artifact store (adapters' bundles and their
 * files, uploaded files, RL jobs' trajectory groups) once every row naming them is gone, or
 * that a crash left before their row was written; and legacy directories under ARTIFACT_ROOT
 * likewise. Rows are the truth. Runs at start and every ARTIFACT_SWEEP_INTERVAL_S, in the
 * background, one sweep at a time.
 *
 * A job's trajectory groups are named by its hold (JobTrajectoryGroups) and by its kept
 * trajectories. The sweep first drops the holds of jobs the orchestrator says have ended (or
 * never were stored); from then on the kept trajectories alone keep the object, until the
 * retention limits have removed the last of them. Without an answer it drops no hold.
 *
 * Only objects older than the grace period are candidates; what is referenced is read, and the
 * unreferenced deleted, under the references lock's exclusive hold, so a row written meanwhile
 * either is seen or finds (under its shared hold) that its object is gone and says so.
 */
@Injectable()
export class ArtifactSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ArtifactSweeper.name);
  private timer: NodeJS.Timeout | null = null;
  /** The sweep under way, if any: a timer that fires meanwhile skips its turn. */
  private running: Promise<void> | null = null;

  constructor(
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
    private readonly legacy: LegacyArtifactDirs,
    private readonly prisma: PrismaService,
    private readonly baseModels: BaseModelBundles,
    private readonly rpc: RpcClient,
    @Inject(RegistryConfig) private readonly config: RegistryConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.sweepInBackground();
    const interval = this.config.ARTIFACT_SWEEP_INTERVAL_S;
    if (interval > 0) {
      this.timer = setInterval(() => this.sweepInBackground(), interval * 1000);
      this.timer.unref();
    }
  }

  /** No sweep starts after this; one under way is not waited for (its transaction ends with the connection). */
  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Starts a sweep unless one is under way; a failure is logged, and the next turn tries again. */
  private sweepInBackground(): void {
    if (this.running) return;
    this.running = this.sweep(new Date(Date.now() - SWEEP_GRACE_MS))
      .then(() => undefined)
      .catch((err: Error) => this.logger.warn(`Artifact sweep failed: ${err.message}`))
      .finally(() => (this.running = null));
  }

  /** Returns how many objects and legacy directories it removed. */
  async sweep(olderThan: Date): Promise<number> {
    const candidates: string[] = [];
    for await (const object of this.store.list()) if (object.modifiedAt < olderThan) candidates.push(object.sha256);
    // Base models this process is publishing have no catalogue row yet: their publishes finish
    // first (outside the lock: a large model takes a while).
    await this.baseModels.settled();
    const ended = await this.endedJobHolds(olderThan);
    // Under the exclusive references lock: no row naming a candidate can be written meanwhile.
    let removed = await this.prisma.$transaction(
      async (tx) => {
        await lockReferencesExclusive(tx);
        if (ended.length > 0) await tx.jobTrajectoryGroups.deleteMany({ where: { jobId: { in: ended } } });
        const live = await this.referencedObjects(tx);
        const unreferenced = candidates.filter((sha256) => !live.has(sha256));
        for (const sha256 of unreferenced) await this.store.delete(sha256);
        return unreferenced.length;
      },
      { timeout: SWEEP_TIMEOUT_MS, maxWait: SWEEP_TIMEOUT_MS },
    );
    removed += await this.sweepLegacy(olderThan);
    if (removed > 0) this.logger.log(`Removed ${removed} unreferenced artifact(s)`);
    return removed;
  }

  /**
   * Deletes one object now if no row names it any more (a file deleted by its owner: its bytes
   * go with it, not at the next sweep). Under the exclusive references lock, as the sweep.
   */
  async deleteIfUnreferenced(sha256: string): Promise<boolean> {
    await this.baseModels.settled();
    return this.prisma.$transaction(
      async (tx) => {
        await lockReferencesExclusive(tx);
        if ((await this.referencedObjects(tx)).has(sha256)) return false;
        await this.store.delete(sha256);
        return true;
      },
      { timeout: SWEEP_TIMEOUT_MS, maxWait: SWEEP_TIMEOUT_MS },
    );
  }

  /**
   * The jobs whose trajectory groups are held, held since before `olderThan` (a younger hold's
   * job may not be stored yet), that the orchestrator says will not run again. None when it
   * does not answer: a hold kept too long costs bytes, one dropped too early a job.
   */
  private async endedJobHolds(olderThan: Date): Promise<string[]> {
    const held = (await this.prisma.jobTrajectoryGroups.findMany({ where: { createdAt: { lt: olderThan } }, select: { jobId: true } })).map((h) => h.jobId);
    const ended: string[] = [];
    try {
      for (let i = 0; i < held.length; i += ENDED_JOBS_CHUNK) {
        ended.push(...(await this.rpc.request(Subjects.training.endedJobs, { job_ids: held.slice(i, i + ENDED_JOBS_CHUNK) })).job_ids);
      }
    } catch (err) {
      this.logger.warn(`Keeping every job's trajectory groups this sweep: the orchestrator did not say which jobs ended (${(err as Error).message})`);
      return [];
    }
    return ended;
  }

  /**
   * Every object a row names: files' contents, jobs' trajectory groups, Tinker's saved states,
   * and the bundles of adapters and published base models with the files their manifests list.
   */
  async referencedObjects(db: Prisma.TransactionClient = this.prisma): Promise<Set<string>> {
    const live = new Set<string>();
    for (const row of await db.jobTrajectoryGroups.findMany({ select: { sha256: true } })) live.add(row.sha256);
    const kept = await db.trajectory.findMany({ where: { objectSha256: { not: null } }, select: { objectSha256: true }, distinct: ['objectSha256'] });
    for (const row of kept) if (row.objectSha256) live.add(row.objectSha256);
    // Tinker's saved states: the training worker stores them, the orchestrator's rows name them.
    for (const row of await db.tinkerSavedState.findMany({ where: { sha256: { not: null } }, select: { sha256: true } })) if (row.sha256) live.add(row.sha256);
    for (const row of await db.file.findMany({ select: { storagePath: true } })) {
      const digest = digestOfRef(row.storagePath);
      if (digest) live.add(digest);
    }
    const bundles = new Map<string, string>();
    for (const row of await db.checkpoint.findMany({ select: { adapterPath: true } })) {
      const digest = digestOfRef(row.adapterPath);
      if (digest) bundles.set(digest, 'A checkpoint names adapter bundle');
    }
    for (const row of await db.publishedBaseModel.findMany({ select: { id: true, bundle: true } })) {
      bundles.set(row.bundle, `Base model ${row.id} is published as bundle`);
    }
    for (const [digest, namedBy] of bundles) {
      if (live.has(digest)) continue;
      live.add(digest);
      try {
        for (const file of (await readBundleManifest(this.store, digest)).files) live.add(file.sha256);
      } catch (err) {
        // A manifest already gone protects nothing; anything else stops the sweep (keep, never guess).
        if (!(err instanceof ArtifactNotFoundError)) throw err;
        this.logger.warn(`${namedBy} ${digest}, which is not in the artifact store`);
      }
    }
    return live;
  }

  private async sweepLegacy(olderThan: Date): Promise<number> {
    await this.legacy.sweepStaging();
    const adapters = await this.legacyOrphans('adapters', olderThan, async (keys) => {
      const rows = await this.prisma.checkpoint.findMany({ where: { adapterPath: { in: keys } }, select: { adapterPath: true } });
      return new Set(rows.map((r) => r.adapterPath));
    });
    const files = await this.legacyOrphans('files', olderThan, async (keys) => {
      const rows = await this.prisma.file.findMany({ where: { storagePath: { in: keys } }, select: { storagePath: true } });
      return new Set(rows.map((r) => r.storagePath));
    });
    for (const entry of [...adapters, ...files]) await this.legacy.remove(entry.key);
    return adapters.length + files.length;
  }

  /** Two levels under a root (`adapters/<model>/<checkpoint>`, `files/<entity>/<file>`), minus those recorded. */
  private async legacyOrphans(root: string, olderThan: Date, recorded: (keys: string[]) => Promise<Set<string>>): Promise<LegacyEntry[]> {
    const found: LegacyEntry[] = [];
    for (const owner of await this.legacy.list(root)) {
      const entries = (await this.legacy.list(owner.key)).filter((e) => e.modifiedAt < olderThan);
      if (entries.length === 0) continue;
      const known = await recorded(entries.map((e) => e.key));
      found.push(...entries.filter((e) => !known.has(e.key)));
    }
    return found;
  }
}
