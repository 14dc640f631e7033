import { IsArray, IsObject, IsString, MaxLength, registerDecorator, ValidateIf, ValidationArguments } from 'class-validator';

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

  /**
   * An uploaded file id (POST /v1/files), an http(s) URL the cluster can reach, or a
   * `wandb-artifact:///{entity}/{project}/{name}:{version}` reference. Required unless
   * training_folder_url is given.
   */
  @ValidateIf((o: CreateSftTrainingJobRequest) => nullable(o, o.training_data_url) || !nullable(o, o.training_folder_url))
  @IsString()
  @MaxLength(4096)
  training_data_url?: string;

  /** Older ART clients' name for training_data_url. */
  @ValidateIf(nullable)
  @IsString()
  @MaxLength(4096)
  @SameAsWhenBoth('training_data_url')
  training_folder_url?: string;

  @ValidateIf(nullable)
  @IsObject()
  config: Record<string, unknown> | null = null;

  @ValidateIf(nullable)
  @IsObject()
  experimental_config: Record<string, unknown> | null = null;

  /** The data reference under either name (validation guarantees one is there). */
  get dataUrl(): string {
    return (this.training_data_url ?? this.training_folder_url) as string;
  }
}

/** Two names for one value: when both are given they must agree. */
function SameAsWhenBoth(other: string): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'sameAsWhenBoth',
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message: `must equal ${other} when both are given` },
      validator: {
        validate: (value: unknown, args: ValidationArguments) => {
          const theirs = (args.object as Record<string, unknown>)[other];
          return theirs === null || theirs === undefined || theirs === value;
        },
      },
    });
}
