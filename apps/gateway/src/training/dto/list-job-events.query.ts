import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';

/** GET /v1/preview/training-jobs/{id}/events?after&limit */
export class ListJobEventsQuery {
  @IsOptional()
  @IsString()
  after?: string;

  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit = 20;
}
