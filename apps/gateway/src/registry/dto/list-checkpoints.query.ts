import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import type { SortOrder } from '@trainyard/contracts';

/** GET /v1/preview/models/{id}/checkpoints?after&limit&order */
export class ListCheckpointsQuery {
  @IsOptional()
  @IsString()
  after?: string;

  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit = 20;

  @IsIn(['asc', 'desc'])
  order: SortOrder = 'asc';
}
