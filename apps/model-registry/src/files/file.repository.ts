import { Injectable } from '@nestjs/common';
import { lockReferencesShared, PrismaService, StillStored } from '@trainyard/db';

export interface FileRow {
  id: string;
  entityId: string;
  filename: string;
  purpose: string;
  bytes: number;
  sha256: string;
  storagePath: string;
  createdAt: Date;
}

@Injectable()
export class FileRepository {
  constructor(private readonly prisma: PrismaService) {}

  create(row: Omit<FileRow, 'createdAt'>, stillStored: StillStored): Promise<FileRow> {
    return this.prisma.$transaction(async (tx) => {
      await lockReferencesShared(tx);
      await stillStored();
      return tx.file.create({ data: row });
    });
  }

  findOwned(entityId: string, fileId: string): Promise<FileRow | null> {
    return this.prisma.file.findFirst({ where: { id: fileId, entityId } });
  }

  listForEntity(entityId: string, purpose?: string): Promise<FileRow[]> {
    return this.prisma.file.findMany({ where: { entityId, ...(purpose ? { purpose } : {}) }, orderBy: { createdAt: 'desc' } });
  }

  async delete(id: string): Promise<boolean> {
    return (await this.prisma.file.deleteMany({ where: { id } })).count > 0;
  }
}
