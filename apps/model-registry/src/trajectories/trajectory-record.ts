import type { TrajectoryRecord } from '@trainyard/contracts';
import { unpackJson } from '@trainyard/db';
import type { TrajectoryRow } from './trajectory.repository';

export function toTrajectoryRecord(row: TrajectoryRow): TrajectoryRecord {
  return {
    id: row.id,
    object: 'trajectory',
    model_id: row.modelId,
    step: row.step,
    split: row.split,
    job_id: row.jobId,
    batch_id: row.batchId,
    group_index: row.groupIndex,
    index: row.trajectoryIndex,
    reward: row.reward,
    bytes: row.bytes,
    trajectory: unpackJson(row.data) as Record<string, unknown>,
    group: unpackJson(row.groupData) as Record<string, unknown>,
    created_at: row.createdAt.toISOString(),
  };
}
