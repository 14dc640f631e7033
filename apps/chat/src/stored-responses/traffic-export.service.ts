import { Injectable } from '@nestjs/common';
import { ExportPageReply, ExportPageRequest, ExportRecord, ServiceError } from '@trainyard/contracts';
import { Retention } from './retention';
import { StoredTrafficRepository } from './stored-traffic.repository';

/** Rows read from the database at a time while a page fills. */
const READ_BATCH = 50;

/**
 * The pages of an export of stored traffic: records with what they were served, oldest first,
 * each page under the byte budget the gateway gives (a NATS reply has a size limit), and
 * always at least one record so that an export moves on.
 */
@Injectable()
export class TrafficExportService {
  constructor(
    private readonly traffic: StoredTrafficRepository,
    private readonly retention: Retention,
  ) {}

  async page(request: ExportPageRequest): Promise<ExportPageReply> {
    const cutoff = this.retention.cutoff();
    let after = request.after === null ? null : cursor(request.after);
    const records: ExportRecord[] = [];
    let bytes = 0;
    while (true) {
      const rows = await this.traffic.rows(request.entity_id, request.source, request.filter, after, READ_BATCH, cutoff);
      for (const row of rows) {
        const size = Buffer.byteLength(JSON.stringify(row.record));
        if (records.length > 0 && bytes + size > request.max_bytes) return { records, next: String(after) };
        records.push(row.record);
        bytes += size;
        after = row.seq;
      }
      if (rows.length < READ_BATCH) return { records, next: null };
    }
  }
}

function cursor(value: string): bigint {
  if (!/^\d{1,19}$/.test(value)) throw ServiceError.invalid('The export cursor is not one this service gave', 'after');
  return BigInt(value);
}
