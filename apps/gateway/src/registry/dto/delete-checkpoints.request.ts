import { ArrayMaxSize, ArrayNotEmpty, IsArray, IsInt, Min } from 'class-validator';

/** DELETE /v1/preview/models/{id}/checkpoints */
export class DeleteCheckpointsRequest {
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(10_000)
  @IsInt({ each: true })
  @Min(0, { each: true })
  steps!: number[];
}
