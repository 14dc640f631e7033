import { Injectable } from '@nestjs/common';
import { lockReferencesShared, PrismaService, StillStored } from '@trainyard/db';
import { isUuid } from '../common/ids';

export interface ModelRow {
  id: string;
  entityId: string;
  entityName: string;
  project: string;
  name: string;
  baseModel: string;
  runId: string | null;
  lastStep: number;
  createdAt: Date;
}

export interface FirstCheckpoint {
  id: string;
  adapterPath: string;
  adapterSha256: string;
}

const withEntity = { entity: { select: { name: true } } } as const;

function toRow(row: Omit<ModelRow, 'entityName'> & { entity: { name: string } }): ModelRow {
  const { entity, ...model } = row;
  return { ...model, entityName: entity.name };
}

@Injectable()
export class ModelRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** The model if it exists and belongs to the entity; another entity's model is as good as missing. */
  async findOwned(entityId: string, modelId: string): Promise<ModelRow | null> {
    if (!isUuid(modelId)) return null;
    const row = await this.prisma.model.findFirst({ where: { id: modelId, entityId }, include: withEntity });
    return row && toRow(row);
  }

  async findByName(entityId: string, project: string, name: string): Promise<ModelRow | null> {
    const row = await this.prisma.model.findUnique({
      where: { entityId_project_name: { entityId, project, name } },
      include: withEntity,
    });
    return row && toRow(row);
  }

  async listForEntity(entityId: string): Promise<ModelRow[]> {
    const rows = await this.prisma.model.findMany({ where: { entityId }, include: withEntity, orderBy: { createdAt: 'asc' } });
    return rows.map(toRow);
  }

  /** The model and its step-0 checkpoint in one statement: there is never a model without a checkpoint. */
  async createWithFirstCheckpoint(
    model: { id: string; entityId: string; project: string; name: string; baseModel: string },
    checkpoint: FirstCheckpoint,
    stillStored: StillStored,
  ): Promise<ModelRow> {
    const row = await this.prisma.$transaction(async (tx) => {
      await lockReferencesShared(tx);
      await stillStored();
      return tx.model.create({
        data: { ...model, lastStep: 0, checkpoints: { create: { ...checkpoint, step: 0 } } },
        include: withEntity,
      });
    });
    return toRow(row);
  }

  /** Deletes the model; checkpoints, jobs, their events and trajectory logs go with it (cascade). */
  async delete(modelId: string): Promise<{ deletedCheckpoints: number } | null> {
    return this.prisma.$transaction(async (tx) => {
      const deletedCheckpoints = await tx.checkpoint.count({ where: { modelId } });
      const { count } = await tx.model.deleteMany({ where: { id: modelId } });
      return count === 0 ? null : { deletedCheckpoints };
    });
  }
}
