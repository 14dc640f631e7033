/** A model directory that cannot be loaded; names the file and, when one is at fault, the tensor. */
export class ModelLoadError extends Error {
  constructor(
    /** What is wrong, without the file: what a client may be told. */
    readonly reason: string,
    readonly file: string,
    readonly tensor?: string,
  ) {
    super(`${file}${tensor ? ` (tensor ${tensor})` : ''}: ${reason}`);
    this.name = 'ModelLoadError';
  }
}

/**
 * A trajectory LoraTrainer.planRl cannot train, by its place among the groups it was given, in
 * the engine's own terms; a service names that place as its API's request does (libs/art's
 * artTrajectoryPath for ART's trajectory_groups).
 */
export class TrajectoryError extends Error {
  constructor(
    readonly group: number,
    readonly trajectory: number,
    /** 0: the trajectory's own history; h > 0: its additionalHistories[h - 1]. */
    readonly history: number,
    /** What is wrong with it, without its place. */
    readonly reason: string,
  ) {
    super(`groups[${group}].trajectories[${trajectory}]${history > 0 ? `.additionalHistories[${history - 1}]` : ''}: ${reason}`);
    this.name = 'TrajectoryError';
  }
}
