import type { CheckpointRecord } from '@trainyard/contracts';
import type { CheckpointRow } from './checkpoint.repository';

export function toCheckpointRecord(row: CheckpointRow): CheckpointRecord {
  return {
    id: row.id,
    step: row.step,
    metrics: (row.metrics ?? {}) as Record<string, number>,
    created_at: row.createdAt.toISOString(),
    adapter_sha256: row.adapterSha256,
  };
}
