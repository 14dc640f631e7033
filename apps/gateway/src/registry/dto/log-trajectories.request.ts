import { IsArray, Matches } from 'class-validator';

/**
 * POST /v1/preview/models/{id}/log. The groups are only checked to be a list here; the
 * registry reads them leniently and names any value it cannot average.
 */
export class LogTrajectoriesRequest {
  @Matches(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/, { message: 'split must be 1 to 64 letters, digits, ".", "_" or "-"' })
  split!: string;

  @IsArray()
  trajectory_groups!: unknown[];
}
