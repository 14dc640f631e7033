import type { ValidationIssue } from '@trainyard/contracts';

/** `trajectory_groups[0].trajectories[1].reward` -> ['body', 'trajectory_groups', 0, 'trajectories', 1, 'reward']. */
export function pathToLoc(path: string): (string | number)[] {
  const loc: (string | number)[] = ['body'];
  for (const match of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    loc.push(match[2] !== undefined ? Number(match[2]) : match[1]);
  }
  return loc;
}

export function issueAt(loc: (string | number)[], msg: string, type = 'value_error'): ValidationIssue {
  return { loc, msg, type };
}
