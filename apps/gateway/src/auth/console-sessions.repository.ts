import { Injectable } from '@nestjs/common';
import { PrismaService } from '@trainyard/db';

export interface StoredSession {
  id: string;
  apiKeyId: string;
  entityId: string;
  entityName: string;
  expiresAt: Date;
}

@Injectable()
export class ConsoleSessionsRepository {
  constructor(private readonly prisma: PrismaService) {}

  async create(apiKeyId: string, tokenHash: string, expiresAt: Date): Promise<void> {
    await this.prisma.consoleSession.create({ data: { apiKeyId, tokenHash, expiresAt } });
  }

  /** The session of a token hash while it lasts and its key is not revoked; else null. */
  async findLive(tokenHash: string, now: Date): Promise<StoredSession | null> {
    const row = await this.prisma.consoleSession.findFirst({
      where: { tokenHash, expiresAt: { gt: now }, apiKey: { revokedAt: null } },
      include: { apiKey: { select: { entityId: true, entity: { select: { name: true } } } } },
    });
    return (
      row && { id: row.id, apiKeyId: row.apiKeyId, entityId: row.apiKey.entityId, entityName: row.apiKey.entity.name, expiresAt: row.expiresAt }
    );
  }

  async delete(id: string): Promise<void> {
    await this.prisma.consoleSession.deleteMany({ where: { id } });
  }

  async deleteExpired(now: Date): Promise<number> {
    return (await this.prisma.consoleSession.deleteMany({ where: { expiresAt: { lte: now } } })).count;
  }
}
