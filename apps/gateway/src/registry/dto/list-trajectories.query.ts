import type { SortOrder } from '@trainyard/contracts';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNumber, IsOptional, IsString, IsUUID, MaxLength, Min } from 'class-validator';
import { PageQuery } from '../../http/page.query';

/** GET /v1/preview/models/{id}/trajectories?after&limit&order&step&split&job_id&min_reward&max_reward */
export class ListTrajectoriesQuery extends PageQuery {
  @IsIn(['asc', 'desc'])
  order: SortOrder = 'asc';

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  step?: number;

  @IsOptional()
  @IsString()
  @MaxLength(200)
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
