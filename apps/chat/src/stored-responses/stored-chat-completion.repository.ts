import { Injectable } from '@nestjs/common';
import { ChatCompletionObject, isStateId, MetadataPairs, ServedTrace, SortOrder } from '@trainyard/contracts';
import { Prisma, PrismaService, unpackJson } from '@trainyard/db';
import { packed } from './conversation.repository';

export interface StoredChatCompletionRow {
  id: string;
  seq: bigint;
  model: string;
  metadata: Record<string, string>;
  /** The chat.completion object as answered. */
  body: ChatCompletionObject;
  createdAt: Date;
}

export interface CompletionListQuery {
  /** Rows strictly after this one in `order`. */
  afterSeq?: bigint;
  take: number;
  order: SortOrder;
  model?: string;
  metadata?: MetadataPairs;
}

const ROW_FIELDS = { id: true, seq: true, model: true, metadata: true, body: true, createdAt: true } as const;

/**
 * Stored chat completions. Every read takes the caller's entity and the retention cutoff: a
 * completion of another entity, or one created before the cutoff, is not there.
 */
@Injectable()
export class StoredChatCompletionRepository {
  constructor(private readonly prisma: PrismaService) {}

  async create(entityId: string, completion: ChatCompletionObject, metadata: Record<string, string>, trace: ServedTrace): Promise<void> {
    await this.prisma.storedChatCompletion.create({
      data: { id: completion.id, entityId, model: completion.model, metadata, body: packed(completion), trace: packed(trace) },
    });
  }

  async find(entityId: string, id: string, cutoff: Date): Promise<StoredChatCompletionRow | null> {
    if (!isStateId(id)) return null;
    const row = await this.prisma.storedChatCompletion.findFirst({ where: { id, entityId, createdAt: { gt: cutoff } }, select: ROW_FIELDS });
    return row && toRow(row);
  }

  /** The trace of a completion already found for its entity. */
  async trace(id: string): Promise<ServedTrace | null> {
    const row = await this.prisma.storedChatCompletion.findUnique({ where: { id }, select: { trace: true } });
    return row && (unpackJson(row.trace) as ServedTrace);
  }

  /** One more row than `take` asks for, so that the list knows whether there are more. */
  async page(entityId: string, query: CompletionListQuery, cutoff: Date): Promise<StoredChatCompletionRow[]> {
    const seq = query.afterSeq === undefined ? undefined : query.order === 'asc' ? { gt: query.afterSeq } : { lt: query.afterSeq };
    const rows = await this.prisma.storedChatCompletion.findMany({
      where: {
        entityId,
        createdAt: { gt: cutoff },
        ...(seq ? { seq } : {}),
        ...(query.model !== undefined ? { model: query.model } : {}),
        AND: metadataConditions(query.metadata),
      },
      orderBy: { seq: query.order },
      take: query.take + 1,
      select: ROW_FIELDS,
    });
    return rows.map(toRow);
  }

  async setMetadata(entityId: string, id: string, metadata: Record<string, string>, cutoff: Date): Promise<StoredChatCompletionRow | null> {
    if (!isStateId(id)) return null;
    const { count } = await this.prisma.storedChatCompletion.updateMany({ where: { id, entityId, createdAt: { gt: cutoff } }, data: { metadata } });
    return count > 0 ? this.find(entityId, id, cutoff) : null;
  }

  async delete(entityId: string, id: string, cutoff: Date): Promise<boolean> {
    if (!isStateId(id)) return false;
    return (await this.prisma.storedChatCompletion.deleteMany({ where: { id, entityId, createdAt: { gt: cutoff } } })).count > 0;
  }

  /** Deletes the completions created before `cutoff`; returns how many. */
  async deleteCreatedBefore(cutoff: Date): Promise<number> {
    return (await this.prisma.storedChatCompletion.deleteMany({ where: { createdAt: { lte: cutoff } } })).count;
  }
}

/** Every pair must match: metadata is plain jsonb, so each pair is one condition on its key. */
export function metadataConditions(metadata: MetadataPairs | undefined): { metadata: { path: string[]; equals: string } }[] {
  return Object.entries(metadata ?? {}).map(([key, value]) => ({ metadata: { path: [key], equals: value } }));
}

function toRow(row: { id: string; seq: bigint; model: string; metadata: Prisma.JsonValue; body: Prisma.JsonValue; createdAt: Date }): StoredChatCompletionRow {
  return {
    id: row.id,
    seq: row.seq,
    model: row.model,
    metadata: row.metadata as Record<string, string>,
    body: unpackJson(row.body) as ChatCompletionObject,
    createdAt: row.createdAt,
  };
}
