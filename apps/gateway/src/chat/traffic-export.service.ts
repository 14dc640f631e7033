import { Injectable } from '@nestjs/common';
import { ErrorCode, ExportFilter, ExportPageReply, ExportRecord, ExportSource, ServiceError, Subjects } from '@trainyard/contracts';
import { RpcClient } from '@trainyard/messaging';
import type { Response } from 'express';
import type { Caller } from '../auth/caller';
import type { ExportTrafficRequest } from './dto/stored-completion.requests';
import { toArtGroups, toSftLines } from './traffic-export';

/** The byte budget of one page the chat service answers (a NATS reply is at most 1 MiB). */
export const EXPORT_PAGE_BYTES = 512 * 1024;
/** The most records one export holds; a filter that matches more is refused, naming how to narrow it. */
export const MAX_EXPORT_RECORDS = 10_000;

/**
 * POST /v1/chat/completions/export and /v1/responses/export: the caller's stored traffic that
 * matches the filter, read page by page from the chat service, as SFT JSONL (application/jsonl,
 * what POST /v1/files takes with purpose fine-tune) or as ART trajectory groups (JSON, what
 * POST /v1/preview/training-jobs takes). Records that cannot be exported are named: in the
 * `skipped` list of an ART export, in the `x-trainyard-export-skipped` header of an SFT one.
 */
@Injectable()
export class TrafficExportService {
  constructor(private readonly rpc: RpcClient) {}

  async export(caller: Caller, source: ExportSource, body: ExportTrafficRequest, res: Response): Promise<void> {
    const records = await this.records(caller, source, filterOf(body));
    const trajectoryBy = body.trajectory_by ?? 'trajectory_id';
    if (body.format === 'sft') {
      const { lines, skipped } = toSftLines(records, { trajectoryBy });
      res.status(200).setHeader('x-trainyard-export-skipped', String(skipped.length));
      res.type('application/jsonl').send(lines.map((line) => `${line}\n`).join(''));
      return;
    }
    const { groups, skipped } = toArtGroups(records, { trajectoryBy, groupBy: body.group_by ?? 'group_id', rewardKey: body.reward_key ?? 'reward' });
    res.status(200).json({ object: 'trajectory_groups.export', trajectory_groups: groups, skipped });
  }

  private async records(caller: Caller, source: ExportSource, filter: ExportFilter): Promise<ExportRecord[]> {
    const records: ExportRecord[] = [];
    let after: string | null = null;
    do {
      const page: ExportPageReply = await this.rpc.request(Subjects.chat.exportPage, { entity_id: caller.entityId, source, filter, after, max_bytes: EXPORT_PAGE_BYTES });
      records.push(...page.records);
      if (records.length > MAX_EXPORT_RECORDS) {
        throw new ServiceError(
          ErrorCode.PayloadTooLarge,
          `The filter matches more than ${MAX_EXPORT_RECORDS} stored records; narrow it (created_after, created_before, metadata, model or ids) and export in parts`,
        );
      }
      after = page.next;
    } while (after !== null);
    return records;
  }
}

/** The conditions given; a field sent as null is no condition. */
function filterOf(body: ExportTrafficRequest): ExportFilter {
  return {
    ...(body.ids != null ? { ids: body.ids } : {}),
    ...(body.model != null ? { model: body.model } : {}),
    ...(body.metadata != null ? { metadata: body.metadata } : {}),
    ...(body.created_after != null ? { created_after: body.created_after } : {}),
    ...(body.created_before != null ? { created_before: body.created_before } : {}),
  };
}
