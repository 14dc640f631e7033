/** One trajectory of a batch, ready to store. */
export interface TrajectoryRowInput {
  groupIndex: number;
  trajectoryIndex: number;
  reward: number;
  bytes: number;
  data: Record<string, unknown>;
  groupData: Record<string, unknown>;
}

/**
 * Trajectory groups as the client sent them, one row per trajectory. Callers validate the
 * groups first (POST .../log computes metrics from them, a training job maps them for the
 * engine); this only reads them leniently: what is not a group or a trajectory is skipped,
 * a missing reward is 0 (as the client treats it).
 */
export function trajectoryRows(groups: unknown): TrajectoryRowInput[] {
  if (!Array.isArray(groups)) return [];
  const rows: TrajectoryRowInput[] = [];
  groups.forEach((group, groupIndex) => {
    if (!isObject(group) || !Array.isArray(group['trajectories'])) return;
    const { trajectories, ...groupData } = group;
    (trajectories as unknown[]).forEach((trajectory, trajectoryIndex) => {
      if (!isObject(trajectory)) return;
      const reward = typeof trajectory['reward'] === 'number' && Number.isFinite(trajectory['reward']) ? trajectory['reward'] : 0;
      const bytes = Buffer.byteLength(JSON.stringify(trajectory), 'utf8');
      rows.push({ groupIndex, trajectoryIndex, reward, bytes, data: trajectory, groupData });
    });
  });
  return rows;
}

/**
 * One trajectory of stored groups, as trajectoryRows made its row: the trajectory and its
 * group's other keys. Null if the groups have no trajectory there.
 */
export function trajectoryAt(groups: unknown, groupIndex: number, trajectoryIndex: number): Pick<TrajectoryRowInput, 'data' | 'groupData'> | null {
  const group: unknown = Array.isArray(groups) ? groups[groupIndex] : undefined;
  if (!isObject(group) || !Array.isArray(group['trajectories'])) return null;
  const { trajectories, ...groupData } = group;
  const trajectory: unknown = (trajectories as unknown[])[trajectoryIndex];
  return isObject(trajectory) ? { data: trajectory, groupData } : null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
