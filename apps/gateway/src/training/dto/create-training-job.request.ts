import { IsArray, IsObject, IsString, MaxLength, ValidateIf } from 'class-validator';

const nullable = (_: unknown, value: unknown) => value !== null && value !== undefined;

/** POST /v1/preview/training-jobs (RL). The groups are checked in depth by the orchestrator, which names each bad path. */
export class CreateTrainingJobRequest {
  @IsString()
  @MaxLength(64)
  model_id!: string;

  @IsArray()
  trajectory_groups!: unknown[];

  @ValidateIf(nullable)
  @IsObject()
  experimental_config: Record<string, unknown> | null = null;
}

/** POST /v1/preview/sft-training-jobs. */
export class CreateSftTrainingJobRequest {
  @IsString()
  @MaxLength(64)
  model_id!: string;

  /** An uploaded file id (POST /v1/files) or an http(s) URL the cluster can reach. */
  @IsString()
  @MaxLength(4096)
  training_data_url!: string;

  @ValidateIf(nullable)
  @IsObject()
  config: Record<string, unknown> | null = null;

  @ValidateIf(nullable)
  @IsObject()
  experimental_config: Record<string, unknown> | null = null;
}
