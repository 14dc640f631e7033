import { Injectable } from '@nestjs/common';
import type { SortOrder } from '@trainyard/contracts';
import { lockReferencesShared, PrismaService, StillStored } from '@trainyard/db';
import { isUuid } from '../common/ids';

export interface CheckpointRow {
  id: string;
  modelId: string;
  step: number;
  metrics: unknown;
  adapterPath: string;
  adapterSha256: string;
  createdAt: Date;
}

export type DeleteStepsOutcome =
  | { kind: 'deleted'; deleted: CheckpointRow[]; notFoundSteps: number[] }
  | { kind: 'would-empty'; keptNone: number[] };

@Injectable()
export class CheckpointRepository {
  constructor(private readonly prisma: PrismaService) {}

  async findInModel(modelId: string, checkpointId: string): Promise<CheckpointRow | null> {
    if (!isUuid(checkpointId)) return null;
    return this.prisma.checkpoint.findFirst({ where: { id: checkpointId, modelId } });
  }

  async findStep(modelId: string, step: number): Promise<CheckpointRow | null> {
    return this.prisma.checkpoint.findUnique({ where: { modelId_step: { modelId, step } } });
  }

  /** The newest remaining checkpoint: what the model serves and trains from. */
  async latest(modelId: string): Promise<CheckpointRow | null> {
    return this.prisma.checkpoint.findFirst({ where: { modelId }, orderBy: { step: 'desc' } });
  }

  /** The newest checkpoint that existed at `time` (and still does). */
  async latestAt(modelId: string, time: Date): Promise<CheckpointRow | null> {
    return this.prisma.checkpoint.findFirst({ where: { modelId, createdAt: { lte: time } }, orderBy: { step: 'desc' } });
  }

  /** One page by step, strictly after `afterStep` in the given order; one extra row tells whether more follow. */
  async page(modelId: string, order: SortOrder, limit: number, afterStep?: number): Promise<CheckpointRow[]> {
    const beyond = afterStep === undefined ? {} : { step: order === 'asc' ? { gt: afterStep } : { lt: afterStep } };
    return this.prisma.checkpoint.findMany({
      where: { modelId, ...beyond },
      orderBy: { step: order },
      take: limit + 1,
    });
  }

  /**
   * A training job's checkpoint at the model's next step (never reused), with the job's id as
   * its own: under the model's row lock, a second request for the same job finds the first.
   */
  async createNext(
    modelId: string,
    id: string,
    adapter: { adapterPath: string; adapterSha256: string },
    metrics: Record<string, number>,
    stillStored: StillStored,
  ): Promise<CheckpointRow> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM models WHERE id = ${modelId}::uuid FOR UPDATE`;
      const existing = await tx.checkpoint.findFirst({ where: { id, modelId } });
      if (existing) return existing;
      await lockReferencesShared(tx);
      await stillStored();
      const model = await tx.model.update({ where: { id: modelId }, data: { lastStep: { increment: 1 } } });
      return tx.checkpoint.create({ data: { id, modelId, step: model.lastStep, metrics, ...adapter } });
    });
  }

  /** Points a legacy row at its adapter's bundle, unless another replica already did. */
  async setAdapter(id: string, fromPath: string, adapter: { adapterPath: string; adapterSha256: string }, stillStored: StillStored): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      await lockReferencesShared(tx);
      await stillStored();
      await tx.checkpoint.updateMany({ where: { id, adapterPath: fromPath }, data: adapter });
    });
  }

  /**
   * Deletes the given steps unless that would leave the model with none. The model row is
   * locked for the check and the delete, so two concurrent deletes cannot each leave the
   * other's last checkpoint and together empty the model.
   */
  async deleteSteps(modelId: string, steps: number[]): Promise<DeleteStepsOutcome> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM models WHERE id = ${modelId}::uuid FOR UPDATE`;
      const targets = await tx.checkpoint.findMany({ where: { modelId, step: { in: steps } }, orderBy: { step: 'asc' } });
      const found = new Set(targets.map((c) => c.step));
      const notFoundSteps = [...new Set(steps)].filter((s) => !found.has(s)).sort((a, b) => a - b);
      if (targets.length > 0) {
        const remaining = await tx.checkpoint.count({ where: { modelId, step: { notIn: steps } } });
        if (remaining === 0) return { kind: 'would-empty', keptNone: targets.map((c) => c.step) };
        await tx.checkpoint.deleteMany({ where: { id: { in: targets.map((c) => c.id) } } });
      }
      return { kind: 'deleted', deleted: targets, notFoundSteps };
    });
  }
}
