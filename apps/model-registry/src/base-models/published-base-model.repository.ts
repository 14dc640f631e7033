import { Injectable } from '@nestjs/common';
import { lockReferencesShared, PrismaService, StillStored } from '@trainyard/db';

export interface PublishedBaseModelRow {
  id: string;
  architecture: string;
  bundle: string;
  signature: string;
  createdAt: Date;
}

/** The catalogue of base models published to the artifact store (table published_base_models). */
@Injectable()
export class PublishedBaseModelRepository {
  constructor(private readonly prisma: PrismaService) {}

  list(): Promise<PublishedBaseModelRow[]> {
    return this.prisma.publishedBaseModel.findMany({ orderBy: { id: 'asc' } });
  }

  find(id: string): Promise<PublishedBaseModelRow | null> {
    return this.prisma.publishedBaseModel.findUnique({ where: { id } });
  }

  /** Records (or replaces) a model's bundle, under the references lock with the bundle checked still stored. */
  save(row: PublishedBaseModelRow, stillStored: StillStored): Promise<void> {
    return this.prisma.$transaction(async (tx) => {
      await lockReferencesShared(tx);
      await stillStored();
      await tx.publishedBaseModel.upsert({ where: { id: row.id }, create: row, update: row });
    });
  }

  /** Removes the models not in `ids` (gone from the publisher's volume); returns their ids. */
  async deleteExcept(ids: string[]): Promise<string[]> {
    const gone = await this.prisma.publishedBaseModel.findMany({ where: { id: { notIn: ids } }, select: { id: true } });
    if (gone.length > 0) await this.prisma.publishedBaseModel.deleteMany({ where: { id: { in: gone.map((g) => g.id) } } });
    return gone.map((g) => g.id);
  }
}
