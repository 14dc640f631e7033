import { Injectable } from '@nestjs/common';
import type { SortOrder } from '@trainyard/contracts';
import { lockReferencesShared, packJson, Prisma, PrismaService, StillStored } from '@trainyard/db';
import { isUuid } from '../common/ids';
import type { TrajectoryRowInput } from './trajectory-rows';

export interface TrajectoryRow {
  id: string;
  seq: bigint;
  modelId: string;
  step: number;
  split: string;
  jobId: string | null;
  batchId: string;
  groupIndex: number;
  trajectoryIndex: number;
  reward: number;
  bytes: number;
  /** Packed; null when objectSha256 names the groups it is in. */
  data: unknown;
  groupData: unknown;
  objectSha256: string | null;
  createdAt: Date;
}

export interface TrajectoryBatch {
  modelId: string;
  batchId: string;
  jobId: string | null;
  step: number;
  split: string;
  rows: TrajectoryRowInput[];
  /**
   * The job's groups in the artifact store (held by its JobTrajectoryGroups row): the rows name
   * it and hold no JSON of their own. Absent for a logged batch, whose rows hold their JSON.
   */
  objectSha256?: string;
}

/** An RL job's groups in the artifact store, held for the job. */
export interface JobGroupsRow {
  jobId: string;
  modelId: string;
  sha256: string;
  bytes: number;
  createdAt: Date;
}

/** Per model: the most trajectories kept, and the most bytes of their JSON. */
export interface RetentionLimits {
  maxCount: number;
  maxBytes: number;
}

export interface TrajectoryFilters {
  step?: number;
  split?: string;
  jobId?: string;
  minReward?: number;
  maxReward?: number;
}

@Injectable()
export class TrajectoryRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Stores a batch, merges `metrics` into its checkpoint (when given) and trims the model to
   * its limits, oldest first, in one transaction under the model's row lock. A batch already
   * stored (a retried request) adds nothing; the reply says how many rows this call added.
   */
  async store(batch: TrajectoryBatch, limits: RetentionLimits, metrics?: { checkpointId: string; values: Record<string, number> }): Promise<number> {
    return this.prisma.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT id FROM models WHERE id = ${batch.modelId}::uuid FOR UPDATE`;
        if (batch.objectSha256 !== undefined) await this.assertHeld(tx, batch.jobId, batch.objectSha256);
        const already = await tx.trajectory.count({ where: { modelId: batch.modelId, batchId: batch.batchId } });
        let added = 0;
        if (already === 0 && batch.rows.length > 0) {
          ({ count: added } = await tx.trajectory.createMany({
            data: batch.rows.map((row) => ({
              modelId: batch.modelId,
              batchId: batch.batchId,
              jobId: batch.jobId,
              step: batch.step,
              split: batch.split,
              groupIndex: row.groupIndex,
              trajectoryIndex: row.trajectoryIndex,
              reward: row.reward,
              bytes: row.bytes,
              ...(batch.objectSha256 !== undefined
                ? { objectSha256: batch.objectSha256 }
                : {
                    data: packJson(row.data) as unknown as Prisma.InputJsonValue,
                    groupData: packJson(row.groupData) as unknown as Prisma.InputJsonValue,
                  }),
            })),
          }));
        }
        if (metrics) {
          // Merged by Postgres (jsonb ||): concurrent logs of two splits both land, keys already there stay.
          await tx.$executeRaw`UPDATE checkpoints SET metrics = metrics || ${JSON.stringify(metrics.values)}::jsonb WHERE id = ${metrics.checkpointId}::uuid`;
        }
        await tx.$executeRaw`
          DELETE FROM trajectories WHERE id IN (
            SELECT id FROM (
              SELECT id, row_number() OVER newest AS n, sum(bytes) OVER newest AS total
              FROM trajectories WHERE model_id = ${batch.modelId}::uuid
              WINDOW newest AS (ORDER BY seq DESC)
            ) ranked
            WHERE n > ${limits.maxCount}::bigint OR total > ${limits.maxBytes}::bigint
          )`;
        return added;
      },
      { timeout: 60_000 },
    );
  }

  /**
   * Holds an RL job's stored groups for the job (a repeated call keeps the first hold), under
   * the references lock's shared hold: `stillStored` checks the object is there, since the
   * sweep may have just removed identical bytes no row named.
   */
  async holdJobGroups(hold: Omit<JobGroupsRow, 'createdAt'>, stillStored: StillStored): Promise<JobGroupsRow> {
    return this.prisma.$transaction(async (tx) => {
      await lockReferencesShared(tx);
      await stillStored();
      return tx.jobTrajectoryGroups.upsert({ where: { jobId: hold.jobId }, create: hold, update: {} });
    });
  }

  findJobGroups(jobId: string): Promise<JobGroupsRow | null> {
    return this.prisma.jobTrajectoryGroups.findUnique({ where: { jobId } });
  }

  /**
   * Rows may name the job's object only while its hold stands: the sweep drops holds, and
   * deletes what no row names, under the references lock's exclusive hold.
   */
  private async assertHeld(tx: Prisma.TransactionClient, jobId: string | null, sha256: string): Promise<void> {
    await lockReferencesShared(tx);
    const hold = jobId === null ? null : await tx.jobTrajectoryGroups.findUnique({ where: { jobId } });
    if (hold?.sha256 !== sha256) throw new Error(`Job ${jobId}'s trajectory groups ${sha256} are no longer held`);
  }

  async findInModel(modelId: string, id: string): Promise<TrajectoryRow | null> {
    if (!isUuid(id)) return null;
    return this.prisma.trajectory.findFirst({ where: { id, modelId } });
  }

  /** One page in storing order, strictly after `afterSeq`; one extra row tells whether more follow. */
  async page(modelId: string, filters: TrajectoryFilters, order: SortOrder, limit: number, afterSeq?: bigint): Promise<TrajectoryRow[]> {
    const reward = filters.minReward === undefined && filters.maxReward === undefined ? {} : { reward: { gte: filters.minReward, lte: filters.maxReward } };
    return this.prisma.trajectory.findMany({
      where: {
        modelId,
        ...(filters.step === undefined ? {} : { step: filters.step }),
        ...(filters.split === undefined ? {} : { split: filters.split }),
        ...(filters.jobId === undefined ? {} : { jobId: filters.jobId }),
        ...reward,
        ...(afterSeq === undefined ? {} : { seq: order === 'asc' ? { gt: afterSeq } : { lt: afterSeq } }),
      },
      orderBy: { seq: order },
      take: limit + 1,
    });
  }
}
