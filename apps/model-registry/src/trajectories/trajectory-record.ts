import type { TrajectoryRecord } from '@trainyard/contracts';
import type { TrajectoryRow } from './trajectory.repository';

/** A trajectory as sent and its group's other keys, read from its row or from the job's stored groups. */
export interface TrajectoryContent {
  trajectory: Record<string, unknown>;
  group: Record<string, unknown>;
}

export function toTrajectoryRecord(row: TrajectoryRow, content: TrajectoryContent): TrajectoryRecord {
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
    trajectory: content.trajectory,
    group: content.group,
    created_at: row.createdAt.toISOString(),
  };
}
