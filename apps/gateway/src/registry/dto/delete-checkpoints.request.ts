import { ArrayMaxSize, ArrayNotEmpty, IsArray, IsInt, Max, Min } from 'class-validator';

/** Steps are PostgreSQL integers: a larger number cannot be a step, and would not fit the query. */
const MAX_STEP = 2 ** 31 - 1;

/** DELETE /v1/preview/models/{id}/checkpoints */
export class DeleteCheckpointsRequest {
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(10_000)
  @IsInt({ each: true })
  @Min(0, { each: true })
  @Max(MAX_STEP, { each: true })
  steps!: number[];
}
