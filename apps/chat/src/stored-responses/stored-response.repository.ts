import { Injectable } from '@nestjs/common';
import { isStateId, ItemPageQuery, ResponseItem, ServedTrace } from '@trainyard/contracts';
import { Prisma, PrismaService, unpackJson } from '@trainyard/db';
import { ConversationRepository, newestOfEach, packed } from './conversation.repository';
import { ItemRow, pageBounds } from './item-page';

export type ItemKind = 'input' | 'output';

export interface StoredResponseRow {
  id: string;
  /** The response object but for its output. */
  body: Record<string, unknown>;
  createdAt: Date;
}

/** What one answered response leaves behind: the response with its items, and/or items appended to a conversation. */
export interface ResponseRecord {
  entityId: string;
  stored: {
    id: string;
    body: Record<string, unknown>;
    input: ResponseItem[];
    output: ResponseItem[];
    /** What an export filters on and trains on. */
    model: string | null;
    metadata: Record<string, string>;
    trace: ServedTrace | null;
  } | null;
  conversation: { id: string; items: ResponseItem[] } | null;
}

/**
 * Stored responses and their items. Every read takes the caller's entity and the retention
 * cutoff: a response of another entity, or one created before the cutoff, is not there.
 */
@Injectable()
export class StoredResponseRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly conversations: ConversationRepository,
  ) {}

  /**
   * Keeps a response and appends to its conversation in one transaction: both happen or
   * neither. False (and nothing kept) when the conversation is gone.
   */
  async record(record: ResponseRecord, cutoff: Date): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      const { stored, conversation, entityId } = record;
      if (conversation && !(await this.conversations.append(entityId, conversation.id, conversation.items, cutoff, tx))) return false;
      if (stored) {
        await tx.storedResponse.create({
          data: { id: stored.id, entityId, body: packed(stored.body), model: stored.model, metadata: stored.metadata, trace: stored.trace === null ? Prisma.DbNull : packed(stored.trace) },
        });
        const rows = [
          ...stored.input.map((item) => ({ kind: 'input', item })),
          ...stored.output.map((item) => ({ kind: 'output', item })),
        ].map(({ kind, item }) => ({ responseId: stored.id, entityId, itemId: item.id, kind, data: packed(item) }));
        if (rows.length > 0) await tx.responseItem.createMany({ data: rows });
      }
      return true;
    });
  }

  async find(entityId: string, id: string, cutoff: Date): Promise<StoredResponseRow | null> {
    if (!isStateId(id)) return null;
    const row = await this.prisma.storedResponse.findFirst({ where: { id, entityId, createdAt: { gt: cutoff } } });
    return row && { id: row.id, body: unpackJson(row.body) as Record<string, unknown>, createdAt: row.createdAt };
  }

  /** Every item of one kind of a response, in order. */
  async items(responseId: string, kind: ItemKind): Promise<ResponseItem[]> {
    const rows = await this.prisma.responseItem.findMany({ where: { responseId, kind }, orderBy: { seq: 'asc' } });
    return rows.map((row) => unpackJson(row.data) as ResponseItem);
  }

  async page(responseId: string, kind: ItemKind, query: ItemPageQuery): Promise<ItemRow[]> {
    const { seq, take, order } = await pageBounds(query, async (itemId) => isStateId(itemId) ? ((await this.prisma.responseItem.findFirst({ where: { responseId, kind, itemId } }))?.seq ?? null) : null);
    const rows = await this.prisma.responseItem.findMany({ where: { responseId, kind, ...(seq ? { seq } : {}) }, orderBy: { seq: order }, take });
    return rows.map((row) => ({ seq: row.seq, itemId: row.itemId, item: unpackJson(row.data) as ResponseItem }));
  }

  /** Deletes the response and every item of it. */
  async delete(entityId: string, id: string, cutoff: Date): Promise<boolean> {
    if (!isStateId(id)) return false;
    return (await this.prisma.storedResponse.deleteMany({ where: { id, entityId, createdAt: { gt: cutoff } } })).count > 0;
  }

  /** The entity's items with these ids, in its live responses (the newest copy of each). */
  async findItems(entityId: string, itemIds: string[], cutoff: Date): Promise<ResponseItem[]> {
    const rows = await this.prisma.responseItem.findMany({
      where: { entityId, itemId: { in: itemIds.filter(isStateId) }, response: { createdAt: { gt: cutoff } } },
      orderBy: { seq: 'desc' },
    });
    return newestOfEach(rows.map((row) => ({ itemId: row.itemId, item: unpackJson(row.data) as ResponseItem })));
  }

  /** Deletes the responses created before `cutoff`, items and all; returns how many. */
  async deleteCreatedBefore(cutoff: Date): Promise<number> {
    return (await this.prisma.storedResponse.deleteMany({ where: { createdAt: { lte: cutoff } } })).count;
  }
}
