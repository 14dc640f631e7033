import { Injectable } from '@nestjs/common';
import { isStateId, ItemPageQuery, ResponseItem } from '@trainyard/contracts';
import { packJson, Prisma, PrismaService, unpackJson } from '@trainyard/db';
import { ItemRow, pageBounds } from './item-page';

export interface ConversationRow {
  id: string;
  metadata: Record<string, string>;
  createdAt: Date;
}

type Db = PrismaService | Prisma.TransactionClient;

/**
 * Conversations and their items. Every read takes the caller's entity and the retention
 * cutoff: a conversation of another entity, or one not changed since the cutoff, is not there.
 */
@Injectable()
export class ConversationRepository {
  constructor(private readonly prisma: PrismaService) {}

  async create(entityId: string, id: string, metadata: Record<string, string>, items: ResponseItem[]): Promise<ConversationRow> {
    return this.prisma.$transaction(async (tx) => {
      const row = await tx.conversation.create({ data: { id, entityId, metadata: packed(metadata) } });
      await insertItems(tx, id, items);
      return toRow(row);
    });
  }

  async find(entityId: string, id: string, cutoff: Date): Promise<ConversationRow | null> {
    if (!isStateId(id)) return null;
    const row = await this.prisma.conversation.findFirst({ where: { id, entityId, updatedAt: { gt: cutoff } } });
    return row && toRow(row);
  }

  async setMetadata(entityId: string, id: string, metadata: Record<string, string>, cutoff: Date): Promise<ConversationRow | null> {
    if (!isStateId(id)) return null;
    const { count } = await this.prisma.conversation.updateMany({
      where: { id, entityId, updatedAt: { gt: cutoff } },
      data: { metadata: packed(metadata), updatedAt: new Date() },
    });
    return count > 0 ? this.find(entityId, id, cutoff) : null;
  }

  /** Deletes the conversation and every item of it. */
  async delete(entityId: string, id: string, cutoff: Date): Promise<boolean> {
    if (!isStateId(id)) return false;
    return (await this.prisma.conversation.deleteMany({ where: { id, entityId, updatedAt: { gt: cutoff } } })).count > 0;
  }

  /**
   * Appends items, in order, to a conversation of the entity; false when there is none. `db`:
   * a transaction to append in (a response's output joins its conversation as it is stored).
   */
  async append(entityId: string, id: string, items: ResponseItem[], cutoff: Date, db: Db = this.prisma): Promise<boolean> {
    if (!isStateId(id)) return false;
    const { count } = await db.conversation.updateMany({ where: { id, entityId, updatedAt: { gt: cutoff } }, data: { updatedAt: new Date() } });
    if (count === 0) return false;
    await insertItems(db, id, items);
    return true;
  }

  /** Every item of a conversation, oldest first. */
  async items(conversationId: string): Promise<ResponseItem[]> {
    const rows = await this.prisma.conversationItem.findMany({ where: { conversationId }, orderBy: { seq: 'asc' } });
    return rows.map((row) => unpackJson(row.data) as ResponseItem);
  }

  async page(conversationId: string, query: ItemPageQuery): Promise<ItemRow[]> {
    const { seq, take, order } = await pageBounds(query, async (itemId) =>
      isStateId(itemId) ? ((await this.prisma.conversationItem.findFirst({ where: { conversationId, itemId } }))?.seq ?? null) : null,
    );
    const rows = await this.prisma.conversationItem.findMany({ where: { conversationId, ...(seq ? { seq } : {}) }, orderBy: { seq: order }, take });
    return rows.map((row) => ({ seq: row.seq, itemId: row.itemId, item: unpackJson(row.data) as ResponseItem }));
  }

  async item(conversationId: string, itemId: string): Promise<ResponseItem | null> {
    if (!isStateId(itemId)) return null;
    const row = await this.prisma.conversationItem.findFirst({ where: { conversationId, itemId }, orderBy: { seq: 'desc' } });
    return row && (unpackJson(row.data) as ResponseItem);
  }

  async deleteItem(conversationId: string, itemId: string): Promise<boolean> {
    if (!isStateId(itemId)) return false;
    return this.prisma.$transaction(async (tx) => {
      const { count } = await tx.conversationItem.deleteMany({ where: { conversationId, itemId } });
      if (count > 0) await tx.conversation.update({ where: { id: conversationId }, data: { updatedAt: new Date() } });
      return count > 0;
    });
  }

  /** The entity's items with these ids, in its live conversations (the newest copy of each). */
  async findItems(entityId: string, itemIds: string[], cutoff: Date): Promise<ResponseItem[]> {
    const rows = await this.prisma.conversationItem.findMany({
      where: { itemId: { in: itemIds.filter(isStateId) }, conversation: { entityId, updatedAt: { gt: cutoff } } },
      orderBy: { seq: 'desc' },
    });
    return newestOfEach(rows.map((row) => ({ itemId: row.itemId, item: unpackJson(row.data) as ResponseItem })));
  }

  /** Deletes the conversations not changed since `cutoff`, items and all; returns how many. */
  async deleteUnchangedSince(cutoff: Date): Promise<number> {
    return (await this.prisma.conversation.deleteMany({ where: { updatedAt: { lte: cutoff } } })).count;
  }
}

async function insertItems(db: Db, conversationId: string, items: ResponseItem[]): Promise<void> {
  if (items.length === 0) return;
  // One statement, in order: seq follows the order of the rows inserted.
  await db.conversationItem.createMany({ data: items.map((item) => ({ conversationId, itemId: item.id, data: packed(item) })) });
}

/** Rows newest first, to the first of each item id. */
export function newestOfEach(rows: { itemId: string; item: ResponseItem }[]): ResponseItem[] {
  const seen = new Map<string, ResponseItem>();
  for (const row of rows) if (!seen.has(row.itemId)) seen.set(row.itemId, row.item);
  return [...seen.values()];
}

/** Client text may hold a NUL character, which jsonb refuses: stored packed (see packJson). */
export function packed(value: unknown): Prisma.InputJsonValue {
  return packJson(value) as unknown as Prisma.InputJsonValue;
}

function toRow(row: { id: string; metadata: unknown; createdAt: Date }): ConversationRow {
  return { id: row.id, metadata: unpackJson(row.metadata) as Record<string, string>, createdAt: row.createdAt };
}
