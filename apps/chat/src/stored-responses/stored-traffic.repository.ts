import { Injectable } from '@nestjs/common';
import { ExportFilter, ExportRecord, ExportSource, isStateId, ServedTrace } from '@trainyard/contracts';
import { Prisma, PrismaService, unpackJson } from '@trainyard/db';
import { metadataConditions } from './stored-chat-completion.repository';

/** A stored completion or response as an export reads it, with its place in the order it was stored. */
export interface TrafficRow {
  seq: bigint;
  record: ExportRecord;
}

interface Conditions {
  entityId: string;
  createdAt: { gt: Date; gte?: Date; lt?: Date };
  seq?: { gt: bigint };
  id?: { in: string[] };
  model?: string;
  AND: ReturnType<typeof metadataConditions>;
}

/**
 * Stored traffic (chat completions kept with `store`, stored responses) read for export, with
 * what each was served, oldest first. Reads take the caller's entity and the retention cutoff,
 * as every read of the stored state does.
 */
@Injectable()
export class StoredTrafficRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Up to `take` rows of the entity's `source` that match `filter`, after `afterSeq`, in the order they were stored. */
  async rows(entityId: string, source: ExportSource, filter: ExportFilter, afterSeq: bigint | null, take: number, cutoff: Date): Promise<TrafficRow[]> {
    const where = conditions(entityId, filter, afterSeq, cutoff);
    if (source === 'chat_completions') {
      const rows = await this.prisma.storedChatCompletion.findMany({ where, orderBy: { seq: 'asc' }, take });
      return rows.map((row) => ({
        seq: row.seq,
        record: { id: row.id, object: 'chat.completion', created_at: unixSeconds(row.createdAt), model: row.model, metadata: asMetadata(row.metadata), trace: unpackJson(row.trace) as ServedTrace },
      }));
    }
    const rows = await this.prisma.storedResponse.findMany({ where, orderBy: { seq: 'asc' }, take, select: { id: true, seq: true, model: true, metadata: true, trace: true, createdAt: true } });
    return rows.map((row) => ({
      seq: row.seq,
      record: {
        id: row.id,
        object: 'response',
        created_at: unixSeconds(row.createdAt),
        model: row.model,
        metadata: asMetadata(row.metadata),
        trace: row.trace === null ? null : (unpackJson(row.trace) as ServedTrace),
      },
    }));
  }
}

function conditions(entityId: string, filter: ExportFilter, afterSeq: bigint | null, cutoff: Date): Conditions {
  const createdAt: Conditions['createdAt'] = { gt: cutoff };
  if (filter.created_after !== undefined) createdAt.gte = new Date(filter.created_after * 1000);
  if (filter.created_before !== undefined) createdAt.lt = new Date(filter.created_before * 1000);
  return {
    entityId,
    createdAt,
    ...(afterSeq !== null ? { seq: { gt: afterSeq } } : {}),
    // An id that is not one of ours names nothing (and must not reach the query).
    ...(filter.ids !== undefined ? { id: { in: filter.ids.filter(isStateId) } } : {}),
    ...(filter.model !== undefined ? { model: filter.model } : {}),
    AND: metadataConditions(filter.metadata),
  };
}

function asMetadata(value: Prisma.JsonValue): Record<string, string> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, string>) : {};
}

function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}
