import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';

/** The cursor pagination of api.md: `after` (id of the last item seen) and `limit` 1..100. */
export class PageQuery {
  @IsOptional()
  @IsString()
  after?: string;

  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit = 20;
}
