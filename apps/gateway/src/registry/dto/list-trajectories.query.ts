import type { SortOrder } from '@trainyard/contracts';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNumber, IsOptional, IsUUID, Matches, Max, Min } from 'class-validator';
import { PageQuery } from '../../http/page.query';

/** GET /v1/preview/models/{id}/trajectories?after&limit&order&step&split&job_id&min_reward&max_reward */
export class ListTrajectoriesQuery extends PageQuery {
  @IsIn(['asc', 'desc'])
  order: SortOrder = 'asc';

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(2_147_483_647)
  step?: number;

  /** A split as POST .../log accepts it: anything else names no split. */
  @IsOptional()
  @Matches(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/, { message: 'split must be 1 to 64 letters, digits, ".", "_" or "-"' })
  split?: string;

  @IsOptional()
  @IsUUID()
  job_id?: string;

  @IsOptional()
  @Type(() => Number)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  min_reward?: number;

  @IsOptional()
  @Type(() => Number)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  max_reward?: number;
}
