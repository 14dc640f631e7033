import { Injectable } from '@nestjs/common';
import { PrismaService } from '@trainyard/db';

export interface StoredKey {
  id: string;
  name: string;
  prefix: string;
  entityId: string;
  entityName: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

const withEntity = { entity: { select: { name: true } } } as const;

function toStoredKey(row: {
  id: string;
  name: string;
  prefix: string;
  entityId: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  entity: { name: string };
}): StoredKey {
  const { entity, ...key } = row;
  return { ...key, entityName: entity.name };
}

@Injectable()
export class ApiKeysRepository {
  constructor(private readonly prisma: PrismaService) {}

  async findByHash(hash: string): Promise<StoredKey | null> {
    const row = await this.prisma.apiKey.findUnique({ where: { hash }, include: withEntity });
    return row && toStoredKey(row);
  }

  async create(entityName: string, name: string, hash: string, prefix: string): Promise<StoredKey> {
    const entity = await this.prisma.entity.upsert({ where: { name: entityName }, create: { name: entityName }, update: {} });
    const row = await this.prisma.apiKey.create({ data: { entityId: entity.id, name, hash, prefix }, include: withEntity });
    return toStoredKey(row);
  }

  async list(entityName?: string): Promise<StoredKey[]> {
    const rows = await this.prisma.apiKey.findMany({
      where: entityName ? { entity: { name: entityName } } : {},
      include: withEntity,
      orderBy: { createdAt: 'asc' },
    });
    return rows.map(toStoredKey);
  }

  /** Revokes by id or by displayed prefix; returns the keys it revoked. */
  async revoke(idOrPrefix: string): Promise<StoredKey[]> {
    const isUuid = /^[0-9a-f-]{36}$/i.test(idOrPrefix);
    const where = isUuid ? { id: idOrPrefix, revokedAt: null } : { prefix: idOrPrefix, revokedAt: null };
    const targets = await this.prisma.apiKey.findMany({ where, include: withEntity });
    await this.prisma.apiKey.updateMany({ where, data: { revokedAt: new Date() } });
    return targets.map(toStoredKey);
  }

  /** Revokes the key if it is the entity's; an already revoked key stays as it was. Null if not the entity's. */
  async revokeOwned(entityId: string, id: string): Promise<StoredKey | null> {
    await this.prisma.apiKey.updateMany({ where: { id, entityId, revokedAt: null }, data: { revokedAt: new Date() } });
    const row = await this.prisma.apiKey.findFirst({ where: { id, entityId }, include: withEntity });
    return row && toStoredKey(row);
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.prisma.apiKey.update({ where: { id }, data: { lastUsedAt: at } });
  }
}
